"""Plain factories over real rows (no mocks). Each takes the organisation first."""

from __future__ import annotations

import datetime
import itertools
from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.utils import timezone

from business.models import (
    Absence,
    Address,
    Customer,
    Equipment,
    Invoice,
    InvoiceLine,
    Job,
    Membership,
    Organisation,
    Payment,
    PriceItem,
    Technician,
    Vehicle,
)

_seq = itertools.count(1)


def next_monday() -> datetime.date:
    """A Monday at least a day ahead on the organisation's clock: a booking there is never in
    the past, whatever day and hour the suite runs."""
    today = timezone.localdate()
    return today + datetime.timedelta(days=7 - today.weekday())


def make_org(name: str = "Clima Sur", **kwargs: Any) -> Organisation:
    n = next(_seq)
    return Organisation.objects.create(name=name, slug=kwargs.pop("slug", f"org-{n}"), **kwargs)


def make_user(org: Organisation | None, role: str = "operator", username: str = "") -> Any:
    user = get_user_model().objects.create_user(
        username=username or f"user{next(_seq)}", password="capataz-test-pw"
    )
    if org is not None:
        Membership.objects.create(user=user, organisation=org, role=role)
    return user


def make_customer(org: Organisation, name: str = "Juan Pérez", **kwargs: Any) -> Customer:
    zone = kwargs.pop("zone", "Sur")
    customer = Customer.objects.create(organisation=org, name=name, **kwargs)
    Address.objects.create(
        organisation=org, customer=customer, street=f"Av. Mitre {next(_seq)}", zone=zone
    )
    return customer


def make_technician(org: Organisation, name: str = "Carlos Gómez", **kwargs: Any) -> Technician:
    kwargs.setdefault("skills", ["ac", "heating"])
    kwargs.setdefault("zone", "Sur")
    kwargs.setdefault("work_days", [0, 1, 2, 3, 4, 5])
    return Technician.objects.create(organisation=org, name=name, **kwargs)


def make_vehicle(org: Organisation, plate: str = "", **kwargs: Any) -> Vehicle:
    return Vehicle.objects.create(
        organisation=org, plate=plate or f"AB{next(_seq):03d}CD", **kwargs
    )


def make_job(
    org: Organisation,
    customer: Customer,
    start: datetime.datetime | None = None,
    hours: int = 2,
    **kwargs: Any,
) -> Job:
    start = start or timezone.now().replace(minute=0, second=0, microsecond=0)
    return Job.objects.create(
        organisation=org,
        customer=customer,
        address=customer.addresses.first(),
        service=kwargs.pop("service", "Service de aire acondicionado"),
        scheduled_start=start,
        scheduled_end=start + datetime.timedelta(hours=hours),
        **kwargs,
    )


def make_equipment(org: Organisation, customer: Customer, **kwargs: Any) -> Equipment:
    kwargs.setdefault("kind", "Split")
    return Equipment.objects.create(organisation=org, customer=customer, **kwargs)


def make_invoice(
    org: Organisation, customer: Customer, amount: Decimal = Decimal("100000"), **kwargs: Any
) -> Invoice:
    invoice = Invoice.objects.create(
        organisation=org,
        customer=customer,
        number=kwargs.pop("number", f"0001-{next(_seq):08d}"),
        **kwargs,
    )
    InvoiceLine.objects.create(invoice=invoice, description="Servicio", unit_price=amount)
    return invoice


def make_price_item(
    org: Organisation, name: str, unit_price: Decimal | str, **kwargs: Any
) -> PriceItem:
    kwargs.setdefault("code", f"item-{next(_seq)}")
    return PriceItem.objects.create(
        organisation=org, name=name, unit_price=Decimal(unit_price), **kwargs
    )


def make_absence(
    org: Organisation,
    technician: Technician,
    start: datetime.date,
    end: datetime.date | None = None,
    **kwargs: Any,
) -> Absence:
    return Absence.objects.create(
        organisation=org, technician=technician, start_date=start, end_date=end or start, **kwargs
    )


def make_payment(
    org: Organisation, invoice: Invoice, amount: Decimal | str, **kwargs: Any
) -> Payment:
    return Payment.objects.create(
        organisation=org, invoice=invoice, amount=Decimal(amount), **kwargs
    )
