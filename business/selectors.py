"""Org-scoped reads. Tenant data is only ever read through these (or the org's own querysets).

`get_<obj>_for_user(user, pk)` returns the object only when it belongs to an organisation the user
is a member of, and raises `<Model>.DoesNotExist` otherwise — an outsider cannot tell a foreign id
from a missing one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from django.db.models import Model, QuerySet

from business.models import (
    Customer,
    Equipment,
    EscalationTicket,
    Invoice,
    Job,
    Membership,
    Organisation,
    Quote,
    Technician,
    Vehicle,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    AnyUser = AbstractBaseUser | AnonymousUser

M = TypeVar("M", bound=Model)


def membership_for_user(user: AnyUser, org_slug: str | None = None) -> Membership | None:
    if not user.is_authenticated:
        return None
    memberships = Membership.objects.filter(user=user).select_related("organisation")
    if org_slug:
        chosen = memberships.filter(organisation__slug=org_slug).first()
        if chosen is not None:
            return chosen
    return memberships.order_by("pk").first()


def organisations_for_user(user: AnyUser) -> QuerySet[Organisation]:
    if not user.is_authenticated:
        return Organisation.objects.none()
    return Organisation.objects.filter(memberships__user=user)


def scoped(model: type[M], organisation: Organisation) -> QuerySet[M]:
    """All rows of a tenant model that belong to `organisation`."""
    return model._default_manager.filter(organisation=organisation)


def _get_for_user(model: type[M], user: AnyUser, pk: object) -> M:
    if not user.is_authenticated:
        raise model.DoesNotExist  # type: ignore[attr-defined]
    return model._default_manager.get(pk=pk, organisation__memberships__user=user)


def get_customer_for_user(user: AnyUser, pk: object) -> Customer:
    return _get_for_user(Customer, user, pk)


def get_technician_for_user(user: AnyUser, pk: object) -> Technician:
    return _get_for_user(Technician, user, pk)


def get_vehicle_for_user(user: AnyUser, pk: object) -> Vehicle:
    return _get_for_user(Vehicle, user, pk)


def get_job_for_user(user: AnyUser, pk: object) -> Job:
    return _get_for_user(Job, user, pk)


def get_equipment_for_user(user: AnyUser, pk: object) -> Equipment:
    return _get_for_user(Equipment, user, pk)


def get_quote_for_user(user: AnyUser, pk: object) -> Quote:
    return _get_for_user(Quote, user, pk)


def get_invoice_for_user(user: AnyUser, pk: object) -> Invoice:
    return _get_for_user(Invoice, user, pk)


def get_ticket_for_user(user: AnyUser, pk: object) -> EscalationTicket:
    return _get_for_user(EscalationTicket, user, pk)
