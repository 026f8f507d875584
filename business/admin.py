"""Admin for tenancy and records: superusers see everything; other staff their organisations."""

from __future__ import annotations

from typing import Any, ClassVar

from django.contrib import admin
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from agents.admin import admin_organisation_ids
from business import models as m


class OrgScopedAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Rows of the organisations the staff user administers (all for a superuser)."""

    list_filter: ClassVar[Any] = ("organisation",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        ids = admin_organisation_ids(request)
        return queryset if ids is None else queryset.filter(organisation_id__in=ids)


class MembershipInline(admin.TabularInline):  # type: ignore[type-arg]
    model = m.Membership
    extra = 0
    autocomplete_fields = ("user",)


@admin.register(m.Organisation)
class OrganisationAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("name", "slug", "timezone", "language", "engine", "engine_in_use")
    prepopulated_fields = {"slug": ("name",)}
    inlines = (MembershipInline,)
    readonly_fields = ("engine_in_use",)

    @admin.display(description=_("engine in use"))
    def engine_in_use(self, obj: m.Organisation) -> str:
        """The engine turns really run: llm and hybrid need an API key (the organisation's
        provider settings or the server's OPENAI_API_KEY); without one it is embedded."""
        if obj.pk is None:
            return "-"
        from copilot.llm.provider import effective_engine

        used = effective_engine(obj)
        label = str(m.Organisation.Engine(used).label)
        if used != obj.engine:
            return str(_("%(engine)s (no API key is set)") % {"engine": label})
        return label

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        ids = admin_organisation_ids(request)
        queryset = super().get_queryset(request)
        return queryset if ids is None else queryset.filter(pk__in=ids)

    def save_model(self, request: HttpRequest, obj: Model, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if not change:
            # A new organisation gets its own copy of the default agent registry.
            from agents.services import agents_install_defaults

            agents_install_defaults(organisation=obj)  # type: ignore[arg-type]


for model, fields in (
    (m.Customer, ("name", "kind", "cuit", "phone", "email")),
    (m.Technician, ("name", "zone", "skills", "active")),
    (m.Vehicle, ("plate", "kind", "fuel", "technician", "active")),
    (m.Job, ("id", "service", "customer", "technician", "status", "scheduled_start")),
    (m.Equipment, ("kind", "brand", "customer", "last_service_on", "service_interval_months")),
    (m.Quote, ("number", "customer", "status", "created_at")),
    (m.Invoice, ("number", "letter", "customer", "status", "issued_on")),
    (m.Payment, ("invoice", "amount", "method", "received_on")),
    (m.EscalationTicket, ("id", "reason", "priority", "status", "customer", "created_at")),
    (m.PriceItem, ("code", "name", "unit_price", "iva_rate")),
    (m.Absence, ("technician", "start_date", "end_date", "reason")),
):
    admin.site.register(
        model,
        type(
            f"{model.__name__}Admin",
            (OrgScopedAdmin,),
            {"list_display": fields, "search_fields": (fields[0],) if fields[0] != "id" else ()},
        ),
    )
