from __future__ import annotations

from django.contrib import admin

from approvals.models import PendingAction
from business.admin import OrgScopedAdmin


@admin.register(PendingAction)
class PendingActionAdmin(OrgScopedAdmin):
    list_display = ("id", "tool", "agent", "status", "requested_by", "created_at", "expires_at")
    list_filter = ("organisation", "status", "category")
    readonly_fields = ("arguments", "snapshot_hash", "result")
