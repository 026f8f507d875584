"""Admin list of the A/B tests (V4), read-only: they are started, measured, stopped and promoted
on their own pages (/metrics/abtests/), which this list links to. Imported by agents/admin.py."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from agents.models import ABTest
from business.admin import OrgAdminAccess, OrgScopedAdmin


@admin.register(ABTest)
class ABTestAdmin(OrgAdminAccess, OrgScopedAdmin):
    list_display = ("name", "agent", "arms", "share_b", "state", "winner", "created_at", "page")
    list_filter = ("state",)
    search_fields = ("name", "agent__name")
    readonly_fields = ("organisation", "agent", "name", "arm_a", "arm_b", "share_b", "state",
                       "winner", "offline", "promoted_version", "created_by", "created_at",
                       "stopped_at")  # fmt: skip

    def get_queryset(self, request: HttpRequest) -> QuerySet[ABTest]:
        return super().get_queryset(request).select_related("agent", "arm_a", "arm_b")

    @admin.display(description=_("arms"))
    def arms(self, obj: ABTest) -> str:
        return f"v{obj.arm_a.number} / v{obj.arm_b.number}"

    @admin.display(description="")
    def page(self, obj: ABTest) -> str:
        url = reverse("abtest_detail", args=[obj.pk])
        return format_html('<a href="{}">{}</a>', url, _("results"))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
