"""Admin for the agent registry (O1, D1): edit agents and intents, see versions, roll back.

Every save goes through `agents.services.agent_save`, so each one records a version that includes
the intents as saved. Access is by organisation: a superuser sees everything (including the
shipped templates); other staff see the agents of the organisations where they are admins.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import NON_FIELD_ERRORS, PermissionDenied, ValidationError
from django.db import models
from django.db.models import Count, QuerySet
from django.forms import BaseInlineFormSet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from agents.models import Agent, AgentIntent, AgentVersion
from agents.registry import all_tools
from agents.selectors import CATEGORY_ORDER, tools_overview
from agents.services import (
    EDITABLE_FIELDS,
    INTENT_FIELDS,
    agent_rollback,
    agent_save,
    agent_snapshot,
    agent_validate,
)
from agents.version_diff import changed_fields, diff_snapshots, previous_version
from business.admin import (
    OrgAdminAccess,
    OrganisationFilter,
    OrgScopedAdmin,
    TenantModelForm,
    admin_organisation_ids,
    can_administer,
    scope_choices,
)
from business.models import Organisation


class VersionOrganisationFilter(OrganisationFilter):
    lookup = "agent__organisation_id"


# --- forms ---------------------------------------------------------------------------------------


def _tool_choices(current: list[str]) -> list[tuple[str, str]]:
    tools = sorted(all_tools(), key=lambda t: (CATEGORY_ORDER.get(str(t.category), 9), t.name))
    choices = [(t.name, f"{t.name} ({t.category})") for t in tools]
    known = {name for name, _label in choices}
    # Keep unknown names visible (and rejected on save) instead of silently dropping them.
    choices += [(name, f"{name} ({_('unknown')})") for name in current if name not in known]
    return choices


class AgentAdminForm(TenantModelForm):
    tools = forms.MultipleChoiceField(
        label=_("enabled tools"), required=False, widget=forms.CheckboxSelectMultiple
    )
    requires_approval_for = forms.MultipleChoiceField(
        label=_("tools that need approval"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text=_("Execute and bulk tools always need approval; add others here."),
    )
    consult_when = forms.CharField(
        label=_("must be consulted when a message mentions"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "cols": 60}),
        help_text=_(
            "Words or phrases, one per line; accents and capitals do not matter. A message that "
            "mentions any of them consults this agent, whatever else it asks."
        ),
    )

    class Meta:
        model = Agent
        fields = ("organisation", "name", *EDITABLE_FIELDS)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        current = list(self.instance.tools or []) + list(self.instance.requires_approval_for or [])
        for name in ("tools", "requires_approval_for"):
            if name in self.fields:
                self.fields[name].choices = _tool_choices(current)  # type: ignore[attr-defined]
        if "consult_when" in self.fields and not self.is_bound:
            self.initial["consult_when"] = "\n".join(self.instance.consult_when or [])

    def clean_consult_when(self) -> list[str]:
        """One phrase per line, blank lines and repeats left out."""
        lines = [" ".join(line.split()) for line in self.cleaned_data["consult_when"].splitlines()]
        return list(dict.fromkeys(line for line in lines if line))

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        values = {key: cleaned.get(key, getattr(self.instance, key)) for key in EDITABLE_FIELDS}
        try:
            agent_validate(values)
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                self.add_error(field if field in self.fields else NON_FIELD_ERRORS, errors)
        return cleaned


# --- inlines -------------------------------------------------------------------------------------


class AgentIntentInline(admin.StackedInline):
    model = AgentIntent
    extra = 0
    # The examples first (what the router learns); what the product knows about the intent in
    # two collapsed groups, so a long list of intents stays readable.
    fieldsets = (
        (None, {"fields": ("name", "description", "example_counts", "examples_es",
                           "examples_en")}),
        (_("What it does"), {
            "classes": ("collapse",),
            "fields": (("writes", "customers", "tool"), ("subject", "date_is", "role"),
                       "ends_conversation", "requires",
                       ("phrase_es", "phrase_en")),
        }),
        (_("Its place in a chain"), {
            "classes": ("collapse",),
            "fields": (("after", "first", "creates"), "absorbs", ("stated_as", "stated_for"),
                       ("found_as", "cue"), ("corrected_by", "picked_as", "existing_as"),
                       ("many_as", "about_work_as", "later_as"),
                       ("invoice_named_as", "undone_by", "new_as")),
        }),
    )  # fmt: skip
    readonly_fields = ("example_counts",)
    formfield_overrides = {
        # One example per line: give the lines room.
        models.TextField: {"widget": forms.Textarea(attrs={"rows": 8, "cols": 90})},
        # Lists of intent or entity names: ["create_customer", "book_job"].
        models.JSONField: {"widget": forms.Textarea(attrs={"rows": 1, "cols": 60})},
    }

    @admin.display(description=_("examples"))
    def example_counts(self, obj: AgentIntent) -> str:
        if obj.pk is None:
            return "—"
        pairs = obj.examples()
        spanish = sum(1 for _text, lang in pairs if lang == "es")
        return f"{spanish} es · {len(pairs) - spanish} en"

    def _parent_allows(self, request: HttpRequest, obj: Agent | None) -> bool:
        if obj is None:
            return can_administer(request)
        return (
            can_administer(request, obj.organisation_id)
            if obj.organisation_id
            else (request.user.is_superuser)
        )

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._parent_allows(request, obj)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._parent_allows(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._parent_allows(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._parent_allows(request, obj)


class AgentVersionInline(admin.TabularInline):
    model = AgentVersion
    extra = 0
    fields = ("number", "note", "created_by", "created_at", "intent_count", "changes", "rollback")
    readonly_fields = fields
    ordering = ("-number",)
    can_delete = False
    verbose_name_plural = _("versions")

    @admin.display(description=_("intents"))
    def intent_count(self, obj: AgentVersion) -> int:
        return int(obj.summary["intents"])

    @admin.display(description=_("changes"))
    def changes(self, obj: AgentVersion) -> str:
        url = reverse("admin:agents_agent_version_diff", args=[obj.agent_id, obj.number])
        before = previous_version(obj)
        if before is None:
            return format_html(
                '<a href="{}?against=current">{}</a>', url, _("compare with current")
            )
        fields = changed_fields(before.snapshot, obj.snapshot)
        return format_html(
            '{} · <a href="{}">{}</a> · <a href="{}?against=current">{}</a>',
            ", ".join(fields) or _("no change"),
            url,
            _("diff with previous"),
            url,
            _("with current"),
        )

    @admin.display(description="")
    def rollback(self, obj: AgentVersion) -> str:
        latest = obj.agent.versions.order_by("-number").values_list("number", flat=True).first()
        if obj.number == latest:
            return str(_("current"))
        url = reverse("admin:agents_agent_rollback", args=[obj.agent_id, obj.number])
        label = _("Roll back to this version")
        return format_html('<a class="button" href="{}">{}</a>', url, label)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Django asks without the agent too (to decide whether the inline's rows are read at
        # all): answering False there left the section empty. The agent page itself is scoped.
        if obj is None:
            return can_administer(request)
        if obj.organisation_id is None:
            return bool(request.user.is_superuser)
        return can_administer(request, obj.organisation_id)


# --- agents --------------------------------------------------------------------------------------


def _intents_from(formset: BaseInlineFormSet) -> list[dict[str, Any]]:
    """The intents as the admin left them: kept and new rows, in display order."""
    intents = []
    for form in formset.forms:
        if form.cleaned_data.get("DELETE") or (form.instance.pk is None and not form.has_changed()):
            continue
        intent = form.instance
        intents.append({key: getattr(intent, key) for key in INTENT_FIELDS})
    return intents


def _record_formset_changes(formset: BaseInlineFormSet) -> None:
    """Fill what `construct_change_message` reads, since the service (not formset.save) wrote."""
    formset.new_objects = []
    formset.changed_objects = []
    formset.deleted_objects = []
    for form in formset.forms:
        if form.cleaned_data.get("DELETE") and form.instance.pk is not None:
            formset.deleted_objects.append(form.instance)
        elif form.instance.pk is None and form.has_changed():
            formset.new_objects.append(form.instance)
        elif form.instance.pk is not None and form.has_changed():
            formset.changed_objects.append((form.instance, form.changed_data))


@admin.register(Agent)
class AgentAdmin(OrgAdminAccess, OrgScopedAdmin):
    form = AgentAdminForm
    inlines = [AgentIntentInline, AgentVersionInline]
    list_display = (
        "name",
        "label_es",
        "organisation_name",
        "category",
        "intent_total",
        "version_total",
        "enabled",
        "updated_at",
    )
    list_display_links = ("name", "label_es")
    list_editable = ("enabled",)
    list_filter = (OrganisationFilter, "enabled", "category")
    search_fields = ("name", "label_es", "label_en", "description")
    readonly_fields = ("updated_at",)
    fieldsets = (
        (None, {"fields": ("organisation", "name", "label_es", "label_en", "category", "enabled")}),
        (
            _("Behaviour"),
            {
                "fields": (
                    "description",
                    "prompt",
                    "model",
                    "context_mode",
                    "direct_line",
                    "consult_when",
                    "min_confidence",
                    "max_plan_steps",
                    "max_tokens",
                )
            },
        ),
        (_("Tools"), {"fields": ("tools",)}),
        (
            _("Approval rules"),
            {"fields": ("requires_approval_for", "approval_expiry_hours", "approval_decider")},
        ),
        (None, {"fields": ("updated_at",)}),
    )
    change_list_template = "admin/agents/agent/change_list.html"

    def get_queryset(self, request: HttpRequest) -> QuerySet[Agent]:
        queryset = super().get_queryset(request).select_related("organisation")
        return queryset.annotate(
            n_intents=Count("intents", distinct=True), n_versions=Count("versions", distinct=True)
        )

    def get_readonly_fields(self, request: HttpRequest, obj: Agent | None = None) -> Any:
        # The name ties an agent to its code and to #name directives; the organisation is fixed.
        if obj is not None:
            return (*self.readonly_fields, "organisation", "name")
        return self.readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        # A new agent needs code behind it (agents/<name>/), so only superusers add agents.
        return bool(request.user.is_superuser)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)

    @admin.display(description=_("organisation"), ordering="organisation__name")
    def organisation_name(self, obj: Agent) -> str:
        return obj.organisation.name if obj.organisation else str(_("— default template —"))

    @admin.display(description=_("intents"), ordering="n_intents")
    def intent_total(self, obj: Agent) -> int:
        return int(getattr(obj, "n_intents", 0))

    @admin.display(description=_("versions"), ordering="n_versions")
    def version_total(self, obj: Agent) -> int:
        return int(getattr(obj, "n_versions", 0))

    def save_model(self, request: HttpRequest, obj: Agent, form: Any, change: bool) -> None:
        # Deliberately empty: the agent is written in save_related, together with its intents,
        # by agent_save — so the version it records holds the intents as saved.
        return None

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        intent_formsets = [f for f in formsets if f.model is AgentIntent]
        intents = _intents_from(intent_formsets[0]) if intent_formsets else None
        cleaned = form.cleaned_data
        changes = {key: cleaned[key] for key in EDITABLE_FIELDS if key in cleaned}
        agent_save(
            agent=form.instance,
            changes=changes,
            intents=intents,
            actor=request.user,
            note=str(_("Saved in the admin")),
        )
        for formset in formsets:
            _record_formset_changes(formset)

    def get_urls(self) -> list[URLPattern]:
        extra = [
            path(
                "<path:object_id>/rollback/<int:number>/",
                self.admin_site.admin_view(self.rollback_view),
                name="agents_agent_rollback",
            ),
            path(
                "<path:object_id>/versions/<int:number>/diff/",
                self.admin_site.admin_view(self.version_diff_view),
                name="agents_agent_version_diff",
            ),
            path("tools/", self.admin_site.admin_view(self.tools_view), name="agents_agent_tools"),
        ]
        return extra + super().get_urls()

    def rollback_view(self, request: HttpRequest, object_id: str, number: int) -> HttpResponse:
        agent = self.get_object(request, object_id)
        if agent is None or not self.has_change_permission(request, agent):
            raise PermissionDenied
        version = get_object_or_404(AgentVersion, agent=agent, number=number)
        change_url = reverse("admin:agents_agent_change", args=[agent.pk])
        if request.method == "POST":
            try:
                new_version = agent_rollback(agent=agent, version_number=number, actor=request.user)
            except ValidationError as exc:
                self.message_user(request, "; ".join(exc.messages), messages.ERROR)
                return HttpResponseRedirect(change_url)
            message = _("Rolled back to v%(old)d (recorded as v%(new)d).") % {
                "old": number,
                "new": new_version.number,
            }
            self.log_change(request, agent, [{"changed": {"fields": [str(message)]}}])
            self.message_user(request, message, messages.SUCCESS)
            return HttpResponseRedirect(change_url)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "agent": agent,
            "version": version,
            "change_url": change_url,
            "title": _("Roll back %(agent)s to v%(number)d") % {"agent": agent, "number": number},
        }
        return TemplateResponse(request, "admin/agents/agent/rollback_confirmation.html", context)

    def version_diff_view(self, request: HttpRequest, object_id: str, number: int) -> HttpResponse:
        """Version `number` against the one before it (or, `?against=current`, the agent as it
        is now), as a line diff of the serialised configuration."""
        agent = self.get_object(request, object_id)
        if agent is None or not self.has_view_permission(request, agent):
            raise Http404
        version = get_object_or_404(AgentVersion, agent=agent, number=number)
        against = "current" if request.GET.get("against") == "current" else "previous"
        if against == "current":
            diff = diff_snapshots(
                version.snapshot, agent_snapshot(agent),
                old_label=f"v{version.number}", new_label=str(_("current")),
            )  # fmt: skip
        else:
            before = previous_version(version)
            diff = diff_snapshots(
                before.snapshot if before is not None else {},
                version.snapshot,
                old_label=f"v{before.number}" if before is not None else "—",
                new_label=f"v{version.number}",
            )
        change_url = reverse("admin:agents_agent_change", args=[agent.pk])
        latest = agent.versions.order_by("-number").values_list("number", flat=True).first()
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "agent": agent,
            "version": version,
            "diff": diff,
            "against": against,
            "change_url": change_url,
            "can_roll_back": self.has_change_permission(request, agent) and number != latest,
            "rollback_url": reverse("admin:agents_agent_rollback", args=[agent.pk, number]),
            "title": _("%(agent)s: changes in v%(number)d") % {"agent": agent, "number": number},
        }
        return TemplateResponse(request, "admin/agents/agent/version_diff.html", context)

    def tools_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        ids = admin_organisation_ids(request)
        organisations = scope_choices(Organisation.objects.order_by("name"), ids)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": _("Tools"),
            "sections": [(org, tools_overview(org)) for org in organisations],
        }
        return TemplateResponse(request, "admin/agents/agent/tools.html", context)


# --- versions ------------------------------------------------------------------------------------


@admin.register(AgentVersion)
class AgentVersionAdmin(OrgAdminAccess, OrgScopedAdmin):
    list_display = ("agent", "organisation_name", "number", "note", "created_by", "created_at")
    list_filter = (VersionOrganisationFilter, "agent__name")
    search_fields = ("agent__name", "note")
    readonly_fields = ("agent", "number", "note", "created_by", "created_at", "snapshot")
    actions = ("rollback_to_version",)
    organisation_lookup = "agent__organisation"

    def organisation_id_of(self, obj: Any) -> int | None:
        return obj.agent.organisation_id if isinstance(obj, AgentVersion) else None

    def get_queryset(self, request: HttpRequest) -> QuerySet[AgentVersion]:
        return super().get_queryset(request).select_related("agent__organisation", "created_by")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # versions are history: read-only

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_rollback_permission(self, request: HttpRequest) -> bool:
        return can_administer(request)

    @admin.display(description=_("organisation"))
    def organisation_name(self, obj: AgentVersion) -> str:
        organisation = obj.agent.organisation
        return organisation.name if organisation else str(_("— default template —"))

    @admin.action(description=_("Roll back to this version"), permissions=["rollback"])
    def rollback_to_version(self, request: HttpRequest, queryset: QuerySet[AgentVersion]) -> None:
        versions = list(queryset[:2])
        if len(versions) != 1:
            self.message_user(request, _("Choose exactly one version."), messages.WARNING)
            return
        version = versions[0]
        try:
            new_version = agent_rollback(
                agent=version.agent, version_number=version.number, actor=request.user
            )
        except ValidationError as exc:
            self.message_user(request, "; ".join(exc.messages), messages.ERROR)
            return
        self.message_user(
            request,
            _("%(agent)s rolled back to v%(old)d (recorded as v%(new)d).")
            % {"agent": version.agent, "old": version.number, "new": new_version.number},
            messages.SUCCESS,
        )


# The proactive agent's schedules, runs and suggestions (their admin lives in its folder), and
# the A/B tests' read-only list.
from agents import abtest_admin  # noqa: E402, F401
from agents.proactive import admin as proactive_admin  # noqa: E402, F401
