"""Admin for the chat and its runtime trace (the per-agent execution rows)."""

from __future__ import annotations

from typing import Any, ClassVar

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from business.admin import OrgScopedAdmin, RegistryCodesAdmin
from business.models import Organisation, choice_label
from copilot.ledger import Break, anchor_chains, verify_chain
from copilot.memory_view import memory_lines
from copilot.models import AgentRun, Conversation, Message, TraceSeal
from nlu.language import detect_language


class MessageInline(admin.TabularInline):  # type: ignore[type-arg]
    model = Message
    extra = 0
    fields = ("role", "agent", "text", "created_at")
    readonly_fields = fields
    can_delete = False


@admin.register(Conversation)
class ConversationAdmin(OrgScopedAdmin):
    list_display = ("id", "titled", "organisation", "user", "channel", "updated_at")
    # The working memory (O9) as the next turn will load it: shown, never edited by hand. The
    # stored summary is what the model reads (English, with intent names); the admin reads it as
    # the chat's memory panel does, in the reader's language (copilot/memory_view.py).
    readonly_fields = ("memory", "state")
    exclude = ("summary",)
    inlines = (MessageInline,)

    @admin.display(description=_("title"), ordering="title")
    def titled(self, conversation: Conversation) -> SafeString:
        """The title in its own language (taken from the first message, which may be English
        on a Spanish screen)."""
        return format_html('<span lang="{}">{}</span>', detect_language(conversation.title),
                           conversation.title)  # fmt: skip

    @admin.display(description=_("what the copilot remembers"))
    def memory(self, conversation: Conversation) -> SafeString | str:
        lines = memory_lines(conversation)
        if not lines:
            return "—"
        html = render_to_string("copilot/_memory_lines.html", {"memory": lines})
        return mark_safe(html)  # noqa: S308 - a template's output, escaped there


# What chose an agent run's step (AgentRun.source), in the reader's words.
_SOURCES = {
    "classifier": pgettext_lazy("step source", "the embedded reading"),
    "model": pgettext_lazy("step source", "the model"),
    "directive": pgettext_lazy("step source", "a #agent directive"),
    "reroute": pgettext_lazy("step source", "handed over by another agent"),
    "continuation": pgettext_lazy("step source", "the conversation so far"),
    "correction": pgettext_lazy("step source", "a correction of the last action"),
    "courtesy": pgettext_lazy("step source", "a greeting or thanks"),
    "obligation": pgettext_lazy("step source", "a step another one needs first"),
    "act": pgettext_lazy("step source", "an option it offered"),
    "signals": pgettext_lazy("step source", "the emergency signals"),
    "doubt": pgettext_lazy("step source", "a question about what was meant"),
}


@admin.register(AgentRun)
class AgentRunAdmin(RegistryCodesAdmin, OrgScopedAdmin):
    CODES: ClassVar[dict[str, str]] = {
        **RegistryCodesAdmin.CODES, "engine": "engine_shown", "source": "source_shown",
    }  # fmt: skip

    list_display = (
        "created_at",
        "agent_shown",
        "intent_shown",
        "confidence",
        "success",
        "yielded",
        "latency_ms",
        "error_shown",
    )
    list_filter = ("organisation", "agent", "success", "yielded")

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.shown_fields(AgentRun)

    @admin.display(description=_("engine"), ordering="engine")
    def engine_shown(self, row: AgentRun) -> str:
        return choice_label(Organisation.Engine, row.engine)

    @admin.display(description=_("source"), ordering="source")
    def source_shown(self, row: AgentRun) -> str:
        return str(_SOURCES.get(row.source, row.source))

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return self.shown_fields(AgentRun)


@admin.register(TraceSeal)
class TraceSealAdmin(OrgScopedAdmin):
    """The organisation's sealed turns: read-only, and the action that checks the chain."""

    list_display = ("organisation", "chain", "seq", "kind", "turn_id", "sealed_at", "digest")
    readonly_fields = (
        "organisation",
        "chain",
        "seq",
        "turn_id",
        "sealed_at",
        "previous",
        "digest",
        "content",
        "anchored",
    )
    actions = ("verify",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description=_("Verify the trace chain of these seals' organisations"))
    def verify(self, request: HttpRequest, queryset: QuerySet[TraceSeal]) -> None:
        ids = set(queryset.values_list("organisation_id", flat=True))
        for organisation in Organisation.objects.filter(pk__in=ids).order_by("name"):
            anchor_chains(organisation.pk)  # the seals written until now, anchored first
            verdict = verify_chain(organisation.pk, first_only=True)
            for redacted in verdict.redacted:
                self.message_user(
                    request,
                    gettext(
                        "Organisation %(org)s: seal #%(seq)d (turn %(turn)s) was redacted by "
                        "%(who)s at %(when)s."
                    )
                    % {
                        "org": organisation.name,
                        "seq": redacted.seq,
                        "turn": redacted.turn_id,
                        "who": redacted.by,
                        "when": redacted.at,
                    },  # fmt: skip
                    messages.INFO,
                )
            if verdict.intact:
                self.message_user(
                    request,
                    gettext("Organisation %(org)s: the chain is intact (%(count)d seals).")
                    % {"org": organisation.name, "count": verdict.seals},
                    messages.SUCCESS,
                )
                continue
            for item in verdict.breaks:
                self.message_user(request, _broken(organisation, item), messages.ERROR)
            if verdict.unsealed:
                self.message_user(
                    request,
                    gettext("Organisation %(org)s: %(count)d ended turns have no seal.")
                    % {"org": organisation.name, "count": len(verdict.unsealed)},
                    messages.ERROR,
                )


def _broken(organisation: Organisation, item: Break) -> str:
    values = {"org": organisation.name, "seq": item.seq, "turn": item.turn_id or "—",
              "detail": item.detail, "chain": item.chain}  # fmt: skip
    if item.chain is None:
        return (
            gettext(
                "Organisation %(org)s: the chain breaks at seal #%(seq)d (turn %(turn)s): "
                "%(detail)s."
            )
            % values
        )
    return (
        gettext(
            "Organisation %(org)s: the chain of conversation %(chain)s breaks at seal #%(seq)d "
            "(turn %(turn)s): %(detail)s."
        )
        % values
    )
