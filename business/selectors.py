"""Org-scoped reads. Tenant data is only ever read through these (or the org's own querysets).

`get_<obj>_for_user(user, pk)` returns the object only when it belongs to an organisation the user
is a member of, and raises `<Model>.DoesNotExist` otherwise — an outsider cannot tell a foreign id
from a missing one.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Literal, NamedTuple, cast
from zoneinfo import ZoneInfo

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import connection
from django.db.models import (
    Case,
    Model,
    Prefetch,
    Q,
    QuerySet,
    Value,
    When,
    prefetch_related_objects,
)
from django.utils import timezone

from business.models import (
    Absence,
    Address,
    Customer,
    Equipment,
    EscalationTicket,
    Invoice,
    InvoiceLine,
    Job,
    JobEvent,
    Membership,
    Organisation,
    Quote,
    QuoteLine,
    Technician,
    Vehicle,
    money,
)
from business.scheduling import fold_words, zone_aliases

AnyUser = AbstractBaseUser | AnonymousUser


def membership_for_user(user: AnyUser, org_slug: str | None = None) -> Membership | None:
    if not user.is_authenticated:
        return None
    memberships = Membership.objects.filter(user_id=user.pk).select_related("organisation")
    if org_slug:
        chosen = memberships.filter(organisation__slug=org_slug).first()
        if chosen is not None:
            return chosen
    return memberships.order_by("pk").first()


def organisations_for_user(user: AnyUser) -> QuerySet[Organisation]:
    if not user.is_authenticated:
        return Organisation.objects.none()
    return Organisation.objects.filter(memberships__user_id=user.pk)


def scoped[M: Model](model: type[M], organisation: Organisation) -> QuerySet[M]:
    """All rows of a tenant model that belong to `organisation`."""
    return model._default_manager.filter(organisation=organisation)


def _get_for_user[M: Model](model: type[M], user: AnyUser, pk: object, *prefetch: Prefetch) -> M:
    if not user.is_authenticated:
        raise model.DoesNotExist  # type: ignore[attr-defined]
    found = model._default_manager.prefetch_related(*prefetch)
    return found.get(pk=pk, organisation__memberships__user=user)


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
    """The quote with its lines read once (its page and PDF add them up and list them)."""
    lines = QuoteLine.objects.order_by("pk")
    return _get_for_user(Quote, user, pk, Prefetch("lines", lines, to_attr=Quote.LINES))


def get_invoice_for_user(user: AnyUser, pk: object) -> Invoice:
    """The invoice with its lines and payments read once (totals, balance and lists)."""
    lines = Prefetch("lines", InvoiceLine.objects.order_by("pk"), to_attr=Invoice.LINES)
    payments = Prefetch("payments", to_attr=Invoice.PAYMENTS)
    return _get_for_user(Invoice, user, pk, lines, payments)


def get_ticket_for_user(user: AnyUser, pk: object) -> EscalationTicket:
    return _get_for_user(EscalationTicket, user, pk)


# --- Reads behind the record pages (dashboard, lists, detail pages) ---


def org_today(organisation: Organisation) -> datetime.date:
    """Today's date where the organisation works, whatever the server's timezone is."""
    return timezone.now().astimezone(ZoneInfo(organisation.timezone)).date()


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
        condition = (
            Q(name__icontains=query)
            | Q(phone__icontains=query)
            | Q(cuit__icontains=query)
            | Q(email__icontains=query)
            | Q(addresses__street__icontains=query)
        )
        # Phones are stored in E.164: "011 4567-8901" is found by its digits past the trunk 0.
        national = _digits(query).lstrip("0")
        if len(national) >= 6:
            condition |= Q(phone__contains=national) | Q(phone_alt__contains=national)
        customers = customers.filter(condition).distinct()
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
        .prefetch_related(
            Prefetch("lines", to_attr=Invoice.LINES), Prefetch("payments", to_attr=Invoice.PAYMENTS)
        )
    )


def invoice_row(invoice: Invoice) -> InvoiceRow:
    """Totals and payment state from prefetched lines and payments (no query per invoice)."""
    total = invoice.totals()["total"]
    paid = money(sum((p.amount for p in invoice.payment_items()), Decimal("0")))
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


def latest_invoice(
    organisation: Organisation, customer: Customer | None = None
) -> InvoiceRow | None:
    """The newest invoice issued (a draft is not one yet), the customer's when given."""
    invoices = invoices_with_amounts(organisation).exclude(status=Invoice.Status.DRAFT)
    if customer is not None:
        invoices = invoices.filter(customer=customer)
    newest = invoices.order_by("-issued_on", "-pk").first()
    return invoice_row(newest) if newest is not None else None


def unpaid_rows(organisation: Organisation) -> list[InvoiceRow]:
    issued = invoices_with_amounts(organisation).filter(status=Invoice.Status.ISSUED)
    return [row for row in invoice_rows(issued) if row.balance > 0]


def quotes_with_lines(organisation: Organisation) -> QuerySet[Quote]:
    return (
        scoped(Quote, organisation)
        .select_related("customer", "job")
        .prefetch_related(Prefetch("lines", to_attr=Quote.LINES))
    )


def overdue_equipment(organisation: Organisation, today: datetime.date) -> list[Equipment]:
    """Equipment past its service date with no open job of its trade booked: the same list, by
    the same definition, as the copilot's "vencidos" (`maintenance_due`, days overdue > 0)."""
    due = maintenance_due(organisation, on=today, within_days=0)
    return [item.equipment for item in due if item.days_overdue > 0]


# The street types nlu/addresses.py reads (records cannot import it: kept in step by a test).
_STREET_TYPE = re.compile(
    r"^(?:av(?:da)?\.?|avenida|calle|pje\.?|pasaje|bvd?\.?|boulevard|diagonal|diag\.?"
    r"|ruta|camino|autopista)\s+"
)


def street_core(street: str) -> str:
    """A street as compared: folded, without its type or "al" ("Av. Cabildo al 500" →
    "cabildo 500"), so "Cabildo 500" finds "Av. Cabildo 500"."""
    folded = " ".join(fold_words(street).replace(",", " ").split())
    folded = _STREET_TYPE.sub("", folded)
    return re.sub(r"\bal\s+(?=\d)", "", folded)


def customers_at_address(
    organisation: Organisation, street: str, limit: int = 10
) -> list[Customer]:
    """The organisation's customers with an address that `street` names, by the same rule a
    booking then checks it with (`customer_address`): "Av. Cabildo 2150", "Cabildo al 2150"
    and "Cabildo 2150" find "Cabildo 2150"; "Cabildo 215" does not."""
    wanted = street_core(street)
    doors = re.findall(r"\d+", wanted)
    if not wanted or not doors:
        return []
    # Narrowed in the database by the door number, decided by the rule in Python.
    candidates = (
        scoped(Customer, organisation)
        .filter(addresses__street__contains=doors[-1])
        .distinct()
        .prefetch_related("addresses")
        .order_by("name", "pk")
    )
    return [c for c in candidates if customer_address(c, street) is not None][:limit]


def customer_address(customer: Customer, street: str) -> Address | None:
    """The customer's own address that `street` names, or None (another customer's address,
    or one not on file, is never taken)."""
    wanted = street_core(street)
    if not wanted:
        return None
    addresses = list(customer.addresses.all())  # one query, or the prefetched list
    for address in addresses:
        if street_core(address.street) == wanted:
            return address
    words = set(wanted.split())
    for address in addresses:
        if words <= set(street_core(address.street).split()):  # "Cabildo 500" in "… 500 PB"
            return address
    return None


# --- documents by the number the product prints ----------------------------------------------
# Numbers arrive as people type them ("P-27", "27", "B 0001-12"); they are read here too (the
# business layer does not import the language engine) and always within one organisation, so a
# number of another organisation is simply not found.
_DOC_DIGITS = re.compile(r"\d+")


def quote_by_number(organisation: Organisation, number: str) -> Quote | None:
    """The organisation's quote "P-000027" from "P-000027", "P-27", "p27" or "27"."""
    text = number.strip()
    digits = _DOC_DIGITS.findall(text)
    candidates = {text}
    if len(digits) == 1:
        candidates.add(f"P-{int(digits[0]):06d}")
    return quotes_with_lines(organisation).filter(number__in=candidates).first()


def invoices_by_number(
    organisation: Organisation, number: str, letter: str | None = None
) -> list[Invoice]:
    """The organisation's invoices numbered "0001-00000012", from "0001-00000012", "B 0001-12",
    "1-12" or "12". A number alone, or with the reader's default point of sale 0001, is also
    looked for at the organisation's own point of sale. Each letter numbers on its own, so
    without a letter "12" may be an A and a B: all of them are returned, the caller asks which.
    With a letter, an invoice of another letter is not it."""
    text = number.strip()
    digits = _DOC_DIGITS.findall(text)
    candidates = {text}
    if len(digits) == 1 or (len(digits) == 2 and int(digits[0]) == 1):  # noqa: PLR2004
        for point_of_sale in {1, organisation.point_of_sale}:
            candidates.add(f"{point_of_sale:04d}-{int(digits[-1]):08d}")
    elif len(digits) == 2:  # noqa: PLR2004 - point of sale and number
        candidates.add(f"{int(digits[0]):04d}-{int(digits[1]):08d}")
    invoices = invoices_with_amounts(organisation).filter(number__in=candidates)
    head = re.match(r"\s*([AaBbCc])\b", text)
    letter = letter or (head.group(1) if head else None)
    if letter:
        invoices = invoices.filter(letter=letter.upper())
    return list(invoices.order_by("letter", "pk"))


def ticket_by_number(organisation: Organisation, number: int | str) -> EscalationTicket | None:
    """The organisation's ticket #12 (tickets are numbered by their id)."""
    digits = _DOC_DIGITS.findall(str(number))
    if len(digits) != 1:
        return None
    return (
        scoped(EscalationTicket, organisation)
        .select_related("customer", "job")
        .filter(pk=int(digits[0]))
        .first()
    )


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


MIN_NAME_PART = 4  # "Ibarra" alone is masked; "Ana" only within "Ana Ruiz"


def people_names(organisation: Organisation) -> tuple[str, ...]:
    """The names of the people in the organisation's records — customers, technicians, members
    — to mask (evaluation cases): each whole name, and each word of a person's name of four
    letters or more, since an operator writes "el de Ibarra" as often as "Graciela Ibarra"."""
    customers = Customer.objects.filter(organisation=organisation).values_list("name", "kind")
    technicians = Technician.objects.filter(organisation=organisation).values_list(
        "name", flat=True
    )
    members = Membership.objects.filter(organisation=organisation).values_list(
        "user__first_name", "user__last_name"
    )
    people = [*technicians, *(f"{first} {last}" for first, last in members)]
    people += [name for name, kind in customers if kind == Customer.Kind.PERSON]
    parts = (word for name in people for word in name.split() if len(word) >= MIN_NAME_PART)
    return tuple(sorted({*(name for name, _kind in customers), *people, *parts} - {" ", ""}))


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
    jobs = customer.jobs.select_related("technician", "address", "vehicle").order_by(
        "-scheduled_start"
    )
    invoices = invoice_rows(invoices_with_amounts(customer.organisation).filter(customer=customer))
    quotes = quotes_with_lines(customer.organisation).filter(customer=customer)
    # Read afresh into the customer's cache: its primary address is read from them too.
    getattr(customer, "_prefetched_objects_cache", {}).pop("addresses", None)
    prefetch_related_objects(
        [customer], Prefetch("addresses", queryset=Address.objects.order_by("-is_primary", "pk"))
    )
    return CustomerFile(
        customer=customer,
        addresses=list(customer.addresses.all()),
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


# --- Reads the copilot needs (search, open work, balances, proactive targets) ---

_ACCENT_CLASSES = {
    "a": "aáàäâãAÁÀÄÂÃ",
    "e": "eéèëêEÉÈËÊ",
    "i": "iíìïîIÍÌÏÎ",
    "o": "oóòöôõOÓÒÖÔÕ",
    "u": "uúùüûUÚÙÜÛ",
    "n": "nñNÑ",
    "c": "cçCÇ",
}


def _accent_pattern(folded: str) -> str:
    """A regex matching `folded` with or without accents, in any case, on either database.

    Both cases are spelled out because PostgreSQL's `~*` only folds ASCII under the C locale.
    """
    parts = []
    for ch in folded:
        if ch in _ACCENT_CLASSES:
            parts.append(f"[{_ACCENT_CLASSES[ch]}]")
        elif ch == " ":
            parts.append(r"[\s-]+")
        else:
            parts.append(re.escape(ch))
    return "".join(parts)


def _digits_pattern(digits: str) -> str:
    """Digits in order with any separators between them ("4567-8901", "4567 8901", "45678901")."""
    return r"[^0-9]*".join(digits)


_NOT_DIGIT = re.compile(r"\D")


@lru_cache(maxsize=32768)
def _digits(text: str) -> str:
    return _NOT_DIGIT.sub("", text or "")


def _is_number_query(folded: str, digits: str) -> bool:
    """Only digits and phone punctuation ("+54 11 4567-8901", "20-12345678-6")."""
    return len(digits) >= 3 and not re.search(r"[^0-9\s+().\-/]", folded)


class _SearchRow(NamedTuple):
    """Just the columns the ranking reads: model instances cost more than the search itself."""

    pk: int
    name: str  # folded
    email: str
    numbers: tuple[str, ...]  # digits of the CUIT and phones
    cuit: str
    addresses: tuple[str, ...]  # folded "street city zone"


def _search_condition(organisation: Organisation, folded: str, digits: str) -> Q:
    """Narrow in SQL on the longest word (or the last digits); the ranking in Python checks all.

    Only on PostgreSQL: SQLite runs REGEXP as a Python callback per row and column, which costs
    more (~100 ms at 5,000 customers) than reading the organisation's rows and filtering them
    in Python (see bench/customer_search.py).
    """
    if connection.vendor != "postgresql":
        return Q()
    if _is_number_query(folded, digits):
        pattern = _digits_pattern(digits[-8:])
        return Q(phone__regex=pattern) | Q(phone_alt__regex=pattern) | Q(cuit__regex=pattern)
    words = [w for w in folded.split() if not w.isdigit()] or folded.split()
    pattern = _accent_pattern(max(words, key=len))
    at_address = scoped(Address, organisation).filter(
        Q(street__iregex=pattern) | Q(city__iregex=pattern) | Q(zone__iregex=pattern)
    )
    return (
        Q(name__iregex=pattern)
        | Q(email__iregex=pattern)
        | Q(cuit__iregex=pattern)
        | Q(phone__iregex=pattern)
        | Q(pk__in=at_address.values("customer_id"))
    )


def _search_rows(organisation: Organisation, condition: Q) -> list[_SearchRow]:
    found = list(
        scoped(Customer, organisation)
        .filter(condition)
        .values_list("pk", "name", "email", "cuit", "phone", "phone_alt")
    )
    addresses = scoped(Address, organisation)
    if len(found) <= 500:  # past that, reading them all beats a long IN list
        addresses = addresses.filter(customer_id__in=[row[0] for row in found])
    by_customer: dict[int, list[str]] = {}
    for customer_id, street, city, zone in addresses.values_list(
        "customer_id", "street", "city", "zone"
    ):
        by_customer.setdefault(customer_id, []).append(fold_words(f"{street} {city} {zone}"))
    return [
        _SearchRow(
            pk,
            fold_words(name),
            email.lower(),
            (_digits(cuit), _digits(phone), _digits(phone_alt)),
            cuit,
            tuple(by_customer.get(pk, ())),
        )
        for pk, name, email, cuit, phone, phone_alt in found
    ]


def _number_rank(row: _SearchRow, digits: str) -> int | None:
    """0 the same number (the last ten digits, so "+54 11…" equals "011…"), 1 its ending,
    2 somewhere inside."""
    ranks = []
    for number in filter(None, row.numbers):
        if number[-10:] == digits[-10:] and len(digits) >= 8:
            ranks.append(0)
        elif number.endswith(digits) or (len(digits) >= 8 and digits.endswith(number[-8:])):
            ranks.append(1)
        elif digits in number:
            ranks.append(2)
    return min(ranks, default=None)


def _text_rank(row: _SearchRow, folded: str) -> int | None:
    """0 exact name or email, 1 prefix of the name or of its words, 2 contained anywhere; None
    when some word of the query is nowhere in the customer's data."""
    haystack = " | ".join([row.name, row.email, row.cuit, *row.numbers, *row.addresses])
    words = folded.split()
    if not all(word in haystack for word in words):
        return None
    if folded in (row.name, row.email):
        return 0
    name_words = row.name.split()
    if row.name.startswith(folded) or all(any(n.startswith(w) for n in name_words) for w in words):
        return 1
    return 2


def customers_search(organisation: Organisation, text: str, *, limit: int = 20) -> list[Customer]:
    """Customers matching `text` by name, phone, CUIT, email or address, accents ignored.

    Ranked exact > prefix (of the name or its words; the end of a phone) > contains, then by
    name. Every word of the query must appear somewhere in the customer's data. SQL narrows the
    candidates (accent-tolerant regex, same on SQLite and PostgreSQL); Python folds and ranks
    plain rows, and only the customers returned are loaded as objects.
    """
    folded, digits = fold_words(text), _digits(text)
    if len(folded.replace(" ", "")) < 2:
        return []
    by_number = _is_number_query(folded, digits)
    ranked = []
    for row in _search_rows(organisation, _search_condition(organisation, folded, digits)):
        rank = _number_rank(row, digits) if by_number else _text_rank(row, folded)
        if rank is not None:
            ranked.append((rank, row.name, row.pk))
    ranked.sort()
    chosen = [pk for _, _, pk in ranked[:limit]]
    addresses = Prefetch("addresses", queryset=Address.objects.order_by("-is_primary", "pk"))
    loaded = Customer.objects.prefetch_related(addresses).in_bulk(chosen)
    return [loaded[pk] for pk in chosen]


def jobs_for_customer(
    organisation: Organisation, customer: Customer, *, open_only: bool = False
) -> QuerySet[Job]:
    """A customer's jobs, the most recent first."""
    jobs = scoped(Job, organisation).filter(customer=customer)
    if open_only:
        jobs = jobs.filter(status__in=Job.OPEN_STATUSES)
    return jobs.select_related("technician", "address", "vehicle").order_by(
        "-scheduled_start", "-pk"
    )


def open_jobs(
    organisation: Organisation,
    *,
    day: datetime.date | None = None,
    day_to: datetime.date | None = None,
    technician: Technician | None = None,
    zone: str | None = None,
    skill: str | None = None,
    customer: Customer | None = None,
) -> QuerySet[Job]:
    """Scheduled or in-progress jobs, filtered by local day (or day..day_to), technician, the
    zone of the job's address (any spelling of it), trade or customer; in time order."""
    jobs = scoped(Job, organisation).filter(status__in=Job.OPEN_STATUSES)
    if day is not None:
        start, end = local_days(organisation, day, ((day_to or day) - day).days + 1)
        jobs = jobs.filter(scheduled_start__gte=start, scheduled_start__lt=end)
    if technician is not None:
        jobs = jobs.filter(technician=technician)
    if zone:
        same_zone = Q()
        for name in zone_aliases(zone):
            same_zone |= Q(address__zone__iexact=name)
        jobs = jobs.filter(same_zone)
    if skill:
        jobs = jobs.filter(skill=skill)
    if customer is not None:
        jobs = jobs.filter(customer=customer)
    return jobs.select_related("customer", "technician", "address", "vehicle").order_by(
        "scheduled_start", "pk"
    )


def technician_jobs_between(
    organisation: Organisation,
    technician: Technician,
    start: datetime.datetime,
    end: datetime.datetime,
    *,
    open_only: bool = True,
) -> QuerySet[Job]:
    """The technician's jobs that overlap [start, end)."""
    jobs = scoped(Job, organisation).filter(
        technician=technician, scheduled_start__lt=end, scheduled_end__gt=start
    )
    if open_only:
        jobs = jobs.filter(status__in=Job.OPEN_STATUSES)
    return jobs.select_related("customer", "address", "vehicle").order_by("scheduled_start", "pk")


@dataclass(frozen=True)
class Balances:
    """Issued invoices with money still owed, oldest first."""

    rows: list[InvoiceRow]
    owed: Decimal
    owed_since: datetime.date | None  # issue date of the oldest unpaid invoice


def invoices_with_balance(organisation: Organisation, customer: Customer | None = None) -> Balances:
    invoices = invoices_with_amounts(organisation).filter(status=Invoice.Status.ISSUED)
    if customer is not None:
        invoices = invoices.filter(customer=customer)
    rows = [row for row in invoice_rows(invoices) if row.balance > 0]
    rows.sort(key=lambda row: (row.invoice.issued_on, row.invoice.pk))
    return Balances(
        rows=rows,
        owed=sum((row.balance for row in rows), Decimal("0.00")),
        owed_since=rows[0].invoice.issued_on if rows else None,
    )


@dataclass(frozen=True)
class Debtor:
    customer: Customer
    owed: Decimal
    owed_since: datetime.date
    invoices: list[InvoiceRow]


def debtors(organisation: Organisation) -> list[Debtor]:
    """Customers who owe money, the largest debt first."""
    by_customer: dict[int, list[InvoiceRow]] = {}
    for row in invoices_with_balance(organisation).rows:
        by_customer.setdefault(row.invoice.customer_id, []).append(row)
    found = [
        Debtor(
            customer=rows[0].invoice.customer,
            owed=sum((row.balance for row in rows), Decimal("0.00")),
            owed_since=rows[0].invoice.issued_on,
            invoices=rows,
        )
        for rows in by_customer.values()
    ]
    return sorted(found, key=lambda d: (-d.owed, d.owed_since, d.customer.pk))


@dataclass(frozen=True)
class MaintenanceDue:
    equipment: Equipment
    due_on: datetime.date
    days_overdue: int  # negative: due in that many days


def _customers_with_open_work(
    organisation: Organisation, since: datetime.date
) -> set[tuple[int, str]]:
    start, _ = local_days(organisation, since, 1)
    jobs = scoped(Job, organisation).filter(
        status__in=Job.OPEN_STATUSES, scheduled_start__gte=start
    )
    return set(jobs.values_list("customer_id", "skill"))


def maintenance_due(
    organisation: Organisation,
    *,
    on: datetime.date | None = None,
    within_days: int = 30,
    exclude_booked: bool = True,
) -> list[MaintenanceDue]:
    """Equipment whose next service date is past or within `within_days` of `on` (default
    today), most overdue first. Equipment whose customer already has an open job of the same
    trade booked is left out (it is being taken care of). Equipment with neither a last service
    nor an installation date has no due date and is not listed here (see seasonal_targets)."""
    on = on or org_today(organisation)
    horizon = on + datetime.timedelta(days=within_days)
    booked = _customers_with_open_work(organisation, on) if exclude_booked else set()
    due = []
    for item in scoped(Equipment, organisation).select_related("customer", "address"):
        next_on = item.next_service_on
        if next_on is None or next_on > horizon or (item.customer_id, item.skill) in booked:
            continue
        due.append(MaintenanceDue(item, next_on, (on - next_on).days))
    return sorted(due, key=lambda d: (d.due_on, d.equipment.pk))


def recently_completed_jobs(
    organisation: Organisation, *, days: int = 14, now: datetime.datetime | None = None
) -> QuerySet[Job]:
    """Jobs finished in the last `days` days that nobody has followed up yet (no follow-up note
    recorded by `services.job_follow_up_record`), the oldest first so none goes stale."""
    now = now or timezone.now()
    followed = JobEvent.objects.filter(
        organisation=organisation, kind=JobEvent.Kind.NOTE, data__follow_up=True
    ).values("job_id")
    return (
        scoped(Job, organisation)
        .filter(status=Job.Status.DONE, completed_at__gte=now - datetime.timedelta(days=days))
        .exclude(pk__in=followed)
        .select_related("customer", "technician", "address")
        .order_by("completed_at", "pk")
    )


# Seasonal campaigns, southern hemisphere: summer runs December–February and winter June–August,
# so the office calls customers in the three months before each. Spring (Oct–Dec): air
# conditioning not serviced in the last 10 months. Autumn (Mar–May): heating and gas appliances,
# same rule. Other months have no campaign.
SEASONAL_CAMPAIGNS: dict[int, tuple[str, tuple[str, ...]]] = {
    **dict.fromkeys((10, 11, 12), ("summer_ac", ("ac",))),
    **dict.fromkeys((3, 4, 5), ("winter_heating", ("heating", "gas"))),
}
SEASONAL_STALE_MONTHS = 10


@dataclass(frozen=True)
class SeasonalTarget:
    equipment: Equipment
    campaign: str
    last_service_on: datetime.date | None  # None: never serviced by us


def _months_before(day: datetime.date, months: int) -> datetime.date:
    index = day.year * 12 + day.month - 1 - months
    return datetime.date(index // 12, index % 12 + 1, min(day.day, 28))


def seasonal_campaign(today: datetime.date) -> str | None:
    campaign = SEASONAL_CAMPAIGNS.get(today.month)
    return campaign[0] if campaign else None


def seasonal_targets(
    organisation: Organisation, today: datetime.date | None = None
) -> list[SeasonalTarget]:
    """Equipment to offer a pre-season service to (see SEASONAL_CAMPAIGNS), never or least
    recently serviced first; customers with open work of that trade are left out."""
    today = today or org_today(organisation)
    if today.month not in SEASONAL_CAMPAIGNS:
        return []
    campaign, skills = SEASONAL_CAMPAIGNS[today.month]
    stale_before = _months_before(today, SEASONAL_STALE_MONTHS)
    booked = _customers_with_open_work(organisation, today)
    equipment = scoped(Equipment, organisation).filter(skill__in=skills).select_related("customer")
    found = [
        SeasonalTarget(item, campaign, item.last_service_on)
        for item in equipment
        if (item.last_service_on is None or item.last_service_on <= stale_before)
        and (item.customer_id, item.skill) not in booked
    ]
    never = datetime.date.min
    return sorted(found, key=lambda t: (t.last_service_on or never, t.equipment.pk))


# --- Collections and opportunities (the proactive agent's schedules read these) -------------


@dataclass(frozen=True)
class OverdueInvoice:
    row: InvoiceRow
    due_on: datetime.date  # its due date, or its issue date when it has none
    days_overdue: int


def overdue_invoices(
    organisation: Organisation, *, today: datetime.date | None = None, days: int = 30
) -> list[OverdueInvoice]:
    """Issued invoices with money owed that are at least `days` past their due date (the issue
    date when there is none), the most overdue first."""
    today = today or org_today(organisation)
    found = []
    for row in invoices_with_balance(organisation).rows:
        due_on = row.invoice.due_on or row.invoice.issued_on
        late = (today - due_on).days
        if late >= days:
            found.append(OverdueInvoice(row, due_on, late))
    return sorted(found, key=lambda o: (-o.days_overdue, o.row.invoice.pk))


@dataclass(frozen=True)
class ReplacementCandidate:
    equipment: Equipment
    age_years: int | None  # None: installation date unknown
    repairs: int  # finished jobs of its trade at its customer within REPAIR_MONTHS


REPLACEMENT_AGE_YEARS = 10
REPLACEMENT_REPAIRS = 3
REPAIR_MONTHS = 24
RECENT_QUOTE_DAYS = 90


def _customers_quoted_since(organisation: Organisation, since: datetime.datetime) -> set[int]:
    return set(scoped(Quote, organisation).filter(created_at__gte=since).values_list(
        "customer_id", flat=True
    ))  # fmt: skip


def replacement_candidates(
    organisation: Organisation, *, today: datetime.date | None = None
) -> list[ReplacementCandidate]:
    """Equipment old enough (REPLACEMENT_AGE_YEARS) or repaired often enough (REPLACEMENT_REPAIRS
    finished jobs of its trade at its customer in REPAIR_MONTHS) to offer a replacement quote;
    customers quoted in the last RECENT_QUOTE_DAYS are left out (they have an offer)."""
    today = today or org_today(organisation)
    start, _ = local_days(organisation, _months_before(today, REPAIR_MONTHS), 1)
    repairs: dict[tuple[int, str], int] = {}
    done = scoped(Job, organisation).filter(status=Job.Status.DONE, completed_at__gte=start)
    for customer_id, skill in done.values_list("customer_id", "skill"):
        repairs[(customer_id, skill)] = repairs.get((customer_id, skill), 0) + 1
    quoted_from, _ = local_days(organisation, today - datetime.timedelta(RECENT_QUOTE_DAYS), 1)
    quoted = _customers_quoted_since(organisation, quoted_from)
    found = []
    for item in scoped(Equipment, organisation).select_related("customer"):
        if item.customer_id in quoted:
            continue
        age = (today - item.installed_on).days // 365 if item.installed_on else None
        count = repairs.get((item.customer_id, item.skill), 0)
        if (age is not None and age >= REPLACEMENT_AGE_YEARS) or count >= REPLACEMENT_REPAIRS:
            found.append(ReplacementCandidate(item, age, count))
    return sorted(found, key=lambda c: (-c.repairs, -(c.age_years or 0), c.equipment.pk))


# A finished job whose service says it was a visit to look and price the work: the customer
# asked for a price. Words as folded (no accents, lower case).
PRICE_REQUEST_WORDS = ("diagnostico", "presupuesto", "visita", "diagnosis", "visit", "quote")
UNQUOTED_DAYS = 30


def unquoted_visits(
    organisation: Organisation, *, now: datetime.datetime | None = None, days: int = UNQUOTED_DAYS
) -> list[Job]:
    """Visits to diagnose or price a job, finished in the last `days` days, whose customer got
    no quote since: the price they asked for is still owed. Oldest first."""
    now = now or timezone.now()
    jobs = scoped(Job, organisation).filter(
        status=Job.Status.DONE, completed_at__gte=now - datetime.timedelta(days=days)
    )
    visits = [
        job
        for job in jobs.select_related("customer").order_by("completed_at", "pk")
        if any(word in fold_words(job.service) for word in PRICE_REQUEST_WORDS)
    ]
    quotes = scoped(Quote, organisation).filter(customer_id__in={job.customer_id for job in visits})
    first_quote: dict[int, list[datetime.datetime]] = {}
    for customer_id, created_at in quotes.values_list("customer_id", "created_at"):
        first_quote.setdefault(customer_id, []).append(created_at)
    return [
        job
        for job in visits
        if not any(at >= job.scheduled_start for at in first_quote.get(job.customer_id, []))
    ]


@dataclass(frozen=True)
class SeasonalRegular:
    customer: Customer
    campaign: str
    skill: str
    last_season_year: int  # the latest earlier year they were served in this season


def _campaign_months(campaign: str) -> list[int]:
    return sorted(month for month, (name, _s) in SEASONAL_CAMPAIGNS.items() if name == campaign)


def seasonal_regulars(
    organisation: Organisation, today: datetime.date | None = None, *, years_back: int = 2
) -> list[SeasonalRegular]:
    """Customers served in this campaign's months in one of the last `years_back` years who have
    no job of its trades this season yet (booked, done or on the board)."""
    today = today or org_today(organisation)
    campaign = seasonal_campaign(today)
    if campaign is None:
        return []
    skills, months = SEASONAL_CAMPAIGNS[today.month][1], _campaign_months(campaign)
    season_start = datetime.date(today.year, months[0], 1)
    start, _ = local_days(organisation, season_start, 1)
    jobs = scoped(Job, organisation).filter(skill__in=skills).exclude(status=Job.Status.CANCELLED)
    this_season = set(jobs.filter(scheduled_start__gte=start).values_list("customer_id", flat=True))
    tz = ZoneInfo(organisation.timezone)
    earliest, _ = local_days(organisation, datetime.date(today.year - years_back, 1, 1), 1)
    served: dict[int, tuple[int, str, Customer]] = {}
    earlier = jobs.filter(status=Job.Status.DONE, scheduled_start__gte=earliest,
                          scheduled_start__lt=start).select_related("customer")  # fmt: skip
    for job in earlier:
        local = job.scheduled_start.astimezone(tz)
        if local.month in months and job.customer_id not in this_season:
            best = served.get(job.customer_id)
            if best is None or local.year > best[0]:
                served[job.customer_id] = (local.year, job.skill, job.customer)
    found = [SeasonalRegular(c, campaign, skill, year) for year, skill, c in served.values()]
    return sorted(found, key=lambda r: (r.customer.name, r.customer.pk))
