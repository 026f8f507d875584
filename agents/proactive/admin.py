"""Admin of the proactive agent's schedules and runs (P1): an organisation's admins edit its
schedules (time, weekdays, enabled, days) and run one now; every run is listed with what it
found, how long it took and its error. Suggestions are listed read-only (they are acted on in
the office's pages). Imported by agents/admin.py."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import formats, timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from agents.models import ProactiveSchedule, ScheduleRun, Suggestion
from agents.proactive.services import schedule_update
from agents.proactive.tasks import BY_DETECTOR
from agents.registry import all_tools
from business.admin import OrgAdminAccess, OrgScopedAdmin


class _ReadOnly(OrgAdminAccess, OrgScopedAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ProactiveSchedule)
class ProactiveScheduleAdmin(OrgAdminAccess, OrgScopedAdmin):
    list_display = ("detector", "organisation", "hour", "minute", "weekdays", "days", "enabled",
                    "last_run")  # fmt: skip
    list_editable = ("enabled",)
    fields = ("organisation", "detector", "hour", "minute", "weekdays", "days", "enabled")
    readonly_fields = ("organisation", "detector")
    actions = ("run_now",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # installed per organisation (agents/proactive/services.py)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description=_("last run"))
    def last_run(self, obj: ProactiveSchedule) -> str:
        run = ScheduleRun.objects.filter(
            organisation_id=obj.organisation_id, detector=obj.detector
        ).first()
        if run is None:
            return "—"
        # In the organisation's zone (the request's: business/middleware.py) and the reader's
        # date format, with the run's status as a word.
        when = formats.date_format(timezone.localtime(run.started_at), "SHORT_DATETIME_FORMAT")
        return f"{when} ({run.get_status_display()})"

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        schedule_update(schedule=obj)

    @admin.action(description=_("Run now"))
    def run_now(self, request: HttpRequest, queryset: QuerySet[ProactiveSchedule]) -> None:
        try:
            for schedule in queryset:
                BY_DETECTOR[schedule.detector].delay(schedule.organisation_id, trigger="admin")
        except Exception as exc:  # the job queue is down: say so, the schedule runs later
            self.message_user(request, _("Could not start it: %(error)s") % {"error": exc},
                              messages.ERROR)  # fmt: skip
            return
        count = queryset.count()
        self.message_user(
            request,
            ngettext("%(count)d schedule started.", "%(count)d schedules started.", count)
            % {"count": count},
            messages.SUCCESS,
        )


@admin.register(ScheduleRun)
class ScheduleRunAdmin(_ReadOnly):
    list_display = ("started_at", "detector", "organisation", "trigger", "status", "found",
                    "created", "expired", "duration_ms")  # fmt: skip
    list_filter = ("organisation", "detector", "status")
    fields = ("organisation", "detector", "trigger", "status", "started_at", "finished_at",
              "duration_ms", "found", "created", "expired", "details", "error")  # fmt: skip
    readonly_fields = fields


@admin.register(Suggestion)
class SuggestionAdmin(_ReadOnly):
    list_display = ("pk", "kind", "organisation", "customer", "state", "priority", "tool_shown",
                    "created_at", "acted_by")  # fmt: skip
    list_filter = ("organisation", "kind", "state")
    fields = ("organisation", "kind", "customer", "records", "facts", "tool_shown", "arguments",
              "priority", "state", "created_at", "acted_by", "acted_at", "dismiss_reason",
              "conversation_id", "turn_id", "outcome", "run")  # fmt: skip
    readonly_fields = fields

    @admin.display(description=_("tool"), ordering="tool")
    def tool_shown(self, suggestion: Suggestion) -> SafeString:
        """The tool by its label in the reader's language; its name as the title (issue 28.1)."""
        tool = next((t for t in all_tools() if t.name == suggestion.tool), None)
        if tool is None:
            return format_html("<code>{}</code>", suggestion.tool)
        return format_html('<span title="{}">{}</span>', suggestion.tool, tool.label)
