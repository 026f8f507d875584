"""Held actions in the admin: read-only records with their audit trail. A decision is never a
field edit — the two actions below go through `action_decide`, like the queue's buttons, so an
admin's approval is claimed once, audited, and runs the action (copilot/receivers.py)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from approvals.models import ApprovalEvent, PendingAction
from approvals.services import action_decide
from business.admin import OrgScopedAdmin, RegistryCodesAdmin


class ApprovalEventInline(admin.TabularInline):  # type: ignore[type-arg]
    model = ApprovalEvent
    fields = ("created_at", "kind", "actor_name", "reason", "detail")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(PendingAction)
class PendingActionAdmin(RegistryCodesAdmin, OrgScopedAdmin):
    list_display = ("id", "summary", "status", "requested_by", "created_at", "expires_at")
    list_filter = ("organisation", "status", "category")
    search_fields = ("summary", "summary_en", "tool")
    inlines = (ApprovalEventInline,)
    actions = ("approve_selected", "reject_selected")

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self._shown()

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return self._shown()

    def _shown(self) -> list[str]:
        # The English summary marked as English: a Spanish page reads it in an English voice;
        # the agent, intent, tool and category by their names in the reader's language.
        names = self.shown_fields(PendingAction)
        return ["summary_in_english" if name == "summary_en" else name for name in names]

    @admin.display(description=_("summary en"))
    def summary_in_english(self, action: PendingAction) -> str:
        return format_html('<span lang="en">{}</span>', action.summary_en)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # the gate files them; nobody types one in

    @admin.action(description=_("Approve the selected actions"), permissions=["change"])
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[PendingAction]) -> None:
        self._decide(request, queryset, approve=True)

    @admin.action(description=_("Reject the selected actions"), permissions=["change"])
    def reject_selected(self, request: HttpRequest, queryset: QuerySet[PendingAction]) -> None:
        self._decide(request, queryset, approve=False)

    def _decide(
        self, request: HttpRequest, queryset: QuerySet[PendingAction], *, approve: bool
    ) -> None:
        done = refused = 0
        for action in queryset:
            decided = action_decide(
                organisation_id=action.organisation_id, action_id=action.pk,
                actor=request.user, approve=approve,  # type: ignore[arg-type]
            )  # fmt: skip
            done += decided.ok
            refused += not decided.ok
        if done:
            self.message_user(
                request,
                ngettext("%(n)d action decided.", "%(n)d actions decided.", done) % {"n": done},
                messages.SUCCESS,
            )
        if refused:
            self.message_user(
                request,
                ngettext(
                    "%(n)d action was not decided (already decided, expired, or your role "
                    "cannot decide it).",
                    "%(n)d actions were not decided (already decided, expired, or your role "
                    "cannot decide them).",
                    refused,
                )
                % {"n": refused},
                messages.WARNING,
            )
