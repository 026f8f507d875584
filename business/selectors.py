"""Org-scoped reads. Tenant data is only ever read through these (or the org's own querysets).

`get_<obj>_for_user(user, pk)` returns the object only when it belongs to an organisation the user
is a member of, and raises `<Model>.DoesNotExist` otherwise — an outsider cannot tell a foreign id
from a missing one.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Literal, TypeVar, cast
from zoneinfo import ZoneInfo

from django.db.models import Case, Model, Prefetch, Q, QuerySet, Value, When

from business.models import (
    Absence,
    Address,
    Customer,
    Equipment,
    EscalationTicket,
    Invoice,
    Job,
    JobEvent,
    Membership,
    Organisation,
    Quote,
    Technician,
    Vehicle,
    money,
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


# --- Reads behind the record pages (dashboard, lists, detail pages) ---


def org_today(organisation: Organisation) -> datetime.date:
    """Today's date where the organisation works, whatever the server's timezone is."""
    return datetime.datetime.now(ZoneInfo(organisation.timezone)).date()


def local_days(
    organisation: Organisation, first: datetime.date, days: int
) -> tuple[datetime.datetime, datetime.datetime]:
    """Aware bounds [start, end) of `days` local calendar days from `first`."""
    tz = ZoneInfo(organisation.timezone)
    last = first + datetime.timedelta(days=days)
    start = datetime.datetime.combine(first, datetime.time.min, tzinfo=tz)
    return start, datetime.datetime.combine(last, datetime.time.min, tzinfo=tz)


def jobs_on_days(organisation: Organisation, first: datetime.date, days: int) -> QuerySet[Job]:
    start, end = local_days(organisation, first, days)
    return (
        scoped(Job, organisation)
        .filter(scheduled_start__gte=start, scheduled_start__lt=end)
        .select_related("customer", "technician", "address", "vehicle")
        .order_by("scheduled_start", "pk")
    )


def filtered_jobs(
    organisation: Organisation,
    *,
    first: datetime.date,
    days: int,
    technician: Technician | None = None,
    status: str = "",
) -> QuerySet[Job]:
    jobs = jobs_on_days(organisation, first, days)
    if technician is not None:
        jobs = jobs.filter(technician=technician)
    if status:
        jobs = jobs.filter(status=status)
    return jobs


def search_customers(organisation: Organisation, query: str = "") -> QuerySet[Customer]:
    # Primary address first, so a template can show `customer.addresses.all.0` without a query.
    addresses = Prefetch("addresses", queryset=Address.objects.order_by("-is_primary", "pk"))
    customers = scoped(Customer, organisation).prefetch_related(addresses)
    if query:
        customers = customers.filter(
            Q(name__icontains=query)
            | Q(phone__icontains=query)
            | Q(cuit__icontains=query)
            | Q(email__icontains=query)
            | Q(addresses__street__icontains=query)
        ).distinct()
    return customers.order_by("name", "pk")


PaymentState = Literal["paid", "partial", "unpaid", "void", "draft"]


@dataclass(frozen=True)
class InvoiceRow:
    invoice: Invoice
    total: Decimal
    paid: Decimal
    balance: Decimal
    state: PaymentState


def invoices_with_amounts(organisation: Organisation) -> QuerySet[Invoice]:
    return (
        scoped(Invoice, organisation)
        .select_related("customer", "job")
        .prefetch_related("lines", "payments")
    )


def invoice_row(invoice: Invoice) -> InvoiceRow:
    """Totals and payment state from prefetched lines and payments (no query per invoice)."""
    total = invoice.totals()["total"]
    paid = money(sum((p.amount for p in invoice.payments.all()), Decimal("0")))
    balance = total - paid
    state: PaymentState
    if invoice.status in (Invoice.Status.VOID, Invoice.Status.DRAFT):
        state = cast(PaymentState, invoice.status)
    elif balance <= 0:
        state = "paid"
    elif paid > 0:
        state = "partial"
    else:
        state = "unpaid"
    return InvoiceRow(invoice=invoice, total=total, paid=paid, balance=balance, state=state)


def invoice_rows(invoices: QuerySet[Invoice], state: str = "") -> list[InvoiceRow]:
    """Rows in the given payment state ("owed" = unpaid or partially paid; "" = all)."""
    # Totals are computed line by line with per-line rounding (see DocumentLine), which SQL
    # would not reproduce exactly, so the state filter runs in Python over prefetched rows.
    rows = [invoice_row(invoice) for invoice in invoices]
    if state == "owed":
        return [row for row in rows if row.state in ("unpaid", "partial")]
    return [row for row in rows if row.state == state] if state else rows


def unpaid_rows(organisation: Organisation) -> list[InvoiceRow]:
    issued = invoices_with_amounts(organisation).filter(status=Invoice.Status.ISSUED)
    return [row for row in invoice_rows(issued) if row.balance > 0]


def quotes_with_lines(organisation: Organisation) -> QuerySet[Quote]:
    return scoped(Quote, organisation).select_related("customer", "job").prefetch_related("lines")


def overdue_equipment(organisation: Organisation, today: datetime.date) -> list[Equipment]:
    # The next service date is derived from the last one and the interval, so it is computed in
    # Python; an organisation's equipment list is small enough for that.
    equipment = scoped(Equipment, organisation).select_related("customer")
    due = [item for item in equipment if item.next_service_on and item.next_service_on < today]
    return sorted(due, key=lambda item: (item.next_service_on, item.pk))


_PRIORITY_ORDER = Case(
    *(
        When(priority=priority, then=Value(rank))
        for rank, priority in enumerate(reversed(EscalationTicket.Priority.values))
    ),
    default=Value(len(EscalationTicket.Priority.values)),
)


def open_tickets(organisation: Organisation) -> QuerySet[EscalationTicket]:
    """Unresolved tickets, most urgent first, then newest first."""
    return (
        scoped(EscalationTicket, organisation)
        .exclude(status=EscalationTicket.Status.RESOLVED)
        .select_related("customer", "job")
        .order_by(_PRIORITY_ORDER, "-created_at", "-pk")
    )


def tickets_shown(organisation: Organisation, show: str = "") -> QuerySet[EscalationTicket]:
    """The tickets page's views: "" the open ones, "resolved", or "all"."""
    if show == "":
        return open_tickets(organisation)
    tickets = scoped(EscalationTicket, organisation).select_related("customer", "job")
    if show == "resolved":
        tickets = tickets.filter(status=EscalationTicket.Status.RESOLVED)
    return tickets.order_by("-created_at", "-pk")


@dataclass(frozen=True)
class DashboardSummary:
    today: datetime.date
    week_end: datetime.date
    todays_jobs: list[Job]
    open_jobs_week: int
    unpaid_total: Decimal
    unpaid_count: int
    overdue: list[Equipment]
    open_tickets: list[EscalationTicket]
    open_ticket_count: int


def dashboard_summary(organisation: Organisation) -> DashboardSummary:
    """What the office looks at first: today's work and what needs chasing."""
    today = org_today(organisation)
    week = jobs_on_days(organisation, today, 7).filter(status__in=Job.OPEN_STATUSES)
    unpaid = unpaid_rows(organisation)
    tickets = open_tickets(organisation)
    return DashboardSummary(
        today=today,
        week_end=today + datetime.timedelta(days=6),
        todays_jobs=list(jobs_on_days(organisation, today, 1)),
        open_jobs_week=week.count(),
        unpaid_total=sum((row.balance for row in unpaid), Decimal("0.00")),
        unpaid_count=len(unpaid),
        overdue=overdue_equipment(organisation, today),
        open_tickets=list(tickets[:5]),
        open_ticket_count=tickets.count(),
    )


def technicians_with_absences(
    organisation: Organisation, today: datetime.date
) -> QuerySet[Technician]:
    # Only absences that have not ended yet matter to the office.
    current = Prefetch(
        "absences",
        queryset=Absence.objects.filter(end_date__gte=today).order_by("start_date"),
        to_attr="current_absences",
    )
    return scoped(Technician, organisation).prefetch_related(current).order_by("name", "pk")


@dataclass(frozen=True)
class CustomerFile:
    customer: Customer
    addresses: list[Address]
    equipment: list[Equipment]
    jobs: list[Job]
    invoices: list[InvoiceRow]
    quotes: list[Quote]
    balance: Decimal


def customer_file(customer: Customer, *, recent_jobs: int = 20) -> CustomerFile:
    """Everything the office shows about one customer (already fetched for the user)."""
    jobs = customer.jobs.select_related("technician", "address").order_by("-scheduled_start")
    invoices = invoice_rows(invoices_with_amounts(customer.organisation).filter(customer=customer))
    quotes = quotes_with_lines(customer.organisation).filter(customer=customer)
    return CustomerFile(
        customer=customer,
        addresses=list(customer.addresses.order_by("-is_primary", "pk")),
        equipment=list(customer.equipment.select_related("address").order_by("kind", "pk")),
        jobs=list(jobs[:recent_jobs]),
        invoices=invoices,
        quotes=list(quotes),
        balance=sum(
            (row.balance for row in invoices if row.state in ("unpaid", "partial")),
            Decimal("0.00"),
        ),
    )


def job_history(job: Job) -> QuerySet[JobEvent]:
    return job.events.select_related("actor").order_by("at", "pk")
