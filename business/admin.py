"""Admin for tenancy and records: superusers see everything; other staff their organisations."""

from __future__ import annotations

from typing import Any, ClassVar

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from business import models as m
from business.models import Membership, Organisation, Role

# --- access: the one tenancy chokepoint of every admin page ---------------------------------


def admin_organisation_ids(request: HttpRequest) -> set[int] | None:
    """The organisations the user administers; None means all of them (a superuser)."""
    user = request.user
    if user.is_superuser:
        return None
    if not (user.is_active and user.is_staff):
        return set()
    memberships = Membership.objects.filter(user=user, role=Role.ADMIN)
    return set(memberships.values_list("organisation_id", flat=True))


def can_administer(request: HttpRequest, organisation_id: int | None = None) -> bool:
    """Whether the user administers that organisation (any of theirs when None; templates,
    which belong to no organisation, only superusers)."""
    ids = admin_organisation_ids(request)
    if ids is None:
        return True
    # Templates (organisation None) belong to nobody but the superusers.
    return bool(ids) if organisation_id is None else organisation_id in ids


class OrgAdminAccess:
    """Permissions by organisation membership instead of Django's per-model permissions."""

    def organisation_id_of(self, obj: Any) -> int | None:
        """The organisation a row belongs to (a row that hangs off another one overrides this)."""
        return getattr(obj, "organisation_id", None)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return can_administer(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is None:
            return can_administer(request)
        ids = admin_organisation_ids(request)
        return ids is None or self.organisation_id_of(obj) in ids

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_view_permission(request, obj)

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        """The organisation to pick is one the user administers."""
        if db_field.name == "organisation":
            ids = admin_organisation_ids(request)
            if ids is not None:
                kwargs["queryset"] = Organisation.objects.filter(pk__in=ids)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)  # type: ignore[misc]


class OrganisationFilter(admin.SimpleListFilter):
    """Lists only the organisations the user administers (the stock filter would list all)."""

    title = _("organisation")
    parameter_name = "organisation"
    lookup = "organisation_id"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        ids = admin_organisation_ids(request)
        organisations = Organisation.objects.order_by("name")
        if ids is not None:
            organisations = organisations.filter(pk__in=ids)
        choices = [(str(org.pk), org.name) for org in organisations]
        if ids is None:
            choices.append(("template", str(_("— default template —"))))
        return choices

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value == "template":
            return queryset.filter(**{f"{self.lookup}__isnull": True})
        if value and value.isdigit():
            return queryset.filter(**{self.lookup: int(value)})
        return queryset


class OrgScopedAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Rows of the organisations the staff user administers (all for a superuser)."""

    list_filter: ClassVar[Any] = ("organisation",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        ids = admin_organisation_ids(request)
        return queryset if ids is None else queryset.filter(organisation_id__in=ids)


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
