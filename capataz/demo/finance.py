"""Demo quotes, invoices with their payments, and escalation tickets.

Line prices come from the organisation's price list, and payments are computed from the same
line arithmetic the models use (`DocumentLine.total`), so balances always add up.
"""

from __future__ import annotations

import datetime
from collections import Counter
from datetime import timedelta
from decimal import Decimal

from business.models import (
    Customer,
    EscalationTicket,
    Invoice,
    InvoiceLine,
    Job,
    Payment,
    Quote,
    QuoteLine,
    money,
)
from capataz.demo import data
from capataz.demo.context import SeedContext

# The same numbering as business.services, which carries on from the demo's last numbers.
QUOTE_NUMBER, INVOICE_NUMBER = "P-{:06d}", "0001-{:08d}"
ACCEPTED_QUOTES = 8
# (status, how many, age range in days) for quotes not tied to a booked job.
OPEN_QUOTES = (("draft", 6, (0, 4)), ("sent", 9, (2, 20)), ("rejected", 3, (15, 40)))
PAYMENT_STATES = ("paid", "partial", "unpaid")
MIN_PER_STATE = 3
METHODS = tuple(Payment.Method)
METHOD_WEIGHTS = (20, 45, 10, 25)  # cash, transfer, card, Mercado Pago
Codes = list[tuple[str, int]]


def _line_fields(ctx: SeedContext, code: str, quantity: int) -> dict[str, object]:
    item = ctx.prices[code]
    return {
        "description": item.name,
        "quantity": Decimal(quantity),
        "unit_price": item.unit_price,
        "iva_rate": item.iva_rate,
    }


def _number(documents: list[Quote] | list[Invoice], pattern: str) -> None:
    """One sequence per invoice letter (A and B are numbered apart, as AFIP wants); quotes
    have one sequence."""
    counters: Counter[str] = Counter()
    for document in documents:
        sequence = getattr(document, "letter", "")
        counters[sequence] += 1
        document.number = pattern.format(counters[sequence])


def _accepted_quotes(ctx: SeedContext) -> list[tuple[Quote, Codes]]:
    """Accepted quotes are the ones that became the installations already on the board."""
    soon = ctx.now + timedelta(days=1)
    upcoming = [
        (job, spec)
        for job, spec in zip(ctx.jobs, ctx.job_specs, strict=True)
        if job.status == Job.Status.SCHEDULED and job.scheduled_start > soon and spec.minutes >= 120
    ]
    drafts = []
    for job, spec in ctx.rng.sample(upcoming, k=min(ACCEPTED_QUOTES, len(upcoming))):
        codes = list(spec.lines)
        if spec.label.startswith("Instalación split 3000"):
            codes.insert(0, ("equipo-split-3000", 1))
        sent = job.created_at.astimezone(ctx.tz).date() - timedelta(days=ctx.rng.randint(1, 6))
        created = ctx.office_moment(sent)
        quote = Quote(
            organisation=ctx.org,
            customer=job.customer,
            job=job,
            status=Quote.Status.ACCEPTED,
            created_at=created,
            notes="Aceptado por WhatsApp.",
        )
        drafts.append((quote, codes))
    return drafts


def _open_quotes(ctx: SeedContext) -> list[tuple[Quote, Codes]]:
    drafts = []
    for status, count, (youngest, oldest) in OPEN_QUOTES:
        for _ in range(count):
            created = ctx.office_moment(ctx.days_ago(youngest, oldest))
            quote = Quote(
                organisation=ctx.org,
                customer=ctx.rng.choice(ctx.customers),
                status=status,
                created_at=created,
            )
            drafts.append((quote, list(ctx.rng.choice(data.QUOTE_BUNDLES))))
    return drafts


def seed_quotes(ctx: SeedContext) -> None:
    drafts = sorted(_accepted_quotes(ctx) + _open_quotes(ctx), key=lambda d: d[0].created_at)
    quotes = [quote for quote, _codes in drafts]
    for quote in quotes:
        quote.valid_until = quote.created_at.astimezone(ctx.tz).date() + timedelta(days=15)
    _number(quotes, QUOTE_NUMBER)
    Quote.objects.bulk_create(quotes)
    QuoteLine.objects.bulk_create(
        QuoteLine(quote=quote, **_line_fields(ctx, code, qty))
        for quote, codes in drafts
        for code, qty in codes
    )


def _invoice_codes(ctx: SeedContext, job: Job, spec: data.ServiceSpec) -> Codes:
    codes = list(spec.lines)
    codes += [(extra, 1) for extra in spec.extras if ctx.rng.random() < 0.3]
    if job.scheduled_start.astimezone(ctx.tz).weekday() == 6:  # Sunday on-call fee
        codes.append(("urgencia", 1))
    return codes


def _invoice_for(ctx: SeedContext, job: Job) -> Invoice:
    customer: Customer = job.customer
    issued = min(
        ctx.today,
        job.scheduled_start.astimezone(ctx.tz).date() + timedelta(days=ctx.rng.choice((0, 0, 1))),
    )
    company = customer.kind == Customer.Kind.COMPANY
    # The services' rule: factura A for companies with a CUIT, B for everyone else.
    letter_a = company and bool(customer.cuit)
    clock = datetime.time(ctx.rng.randint(9, 17), ctx.rng.choice((0, 15, 30, 45)))
    written = ctx.at(issued, clock)
    if job.completed_at is not None and written < job.completed_at:
        written = job.completed_at + timedelta(minutes=ctx.rng.randint(20, 90))
    return Invoice(
        organisation=ctx.org,
        customer=customer,
        job=job,
        status=Invoice.Status.ISSUED,
        letter=Invoice.Letter.A if letter_a else Invoice.Letter.B,
        issued_on=issued,
        due_on=issued + timedelta(days=30 if company else 15),
        created_at=min(written, ctx.now),
    )


def _payment_states(ctx: SeedContext, invoices: list[Invoice]) -> list[str]:
    states = []
    for invoice in invoices:
        old = (ctx.today - invoice.issued_on).days > 30
        weights = (75, 10, 15) if old else (45, 15, 40)
        states.append(ctx.rng.choices(PAYMENT_STATES, weights)[0])
    # A short history could miss a case the demo must show: the most common state gives way.
    counts = Counter(states)
    for state in PAYMENT_STATES:
        for index, donor in enumerate(states):
            if counts[state] >= MIN_PER_STATE:
                break
            if donor != state and counts[donor] > MIN_PER_STATE:
                states[index] = state
                counts[donor] -= 1
                counts[state] += 1
    return states


def _payment(ctx: SeedContext, invoice: Invoice, amount: Decimal, day: datetime.date) -> Payment:
    rng = ctx.rng
    method = rng.choices(METHODS, METHOD_WEIGHTS)[0]
    reference = {
        Payment.Method.TRANSFER: f"TRF {rng.randint(10**7, 10**8 - 1)}",
        Payment.Method.MERCADOPAGO: f"MP-{rng.randint(10**9, 10**10 - 1)}",
        Payment.Method.CARD: f"Cupón {rng.randint(1000, 9999)}",
    }.get(method, "")
    return Payment(
        organisation=ctx.org,
        invoice=invoice,
        amount=amount,
        method=method,
        received_on=day,
        reference=reference,
    )


def _payments_for(ctx: SeedContext, invoice: Invoice, total: Decimal, state: str) -> list[Payment]:
    if state == "unpaid":
        return []
    due = invoice.due_on or invoice.issued_on
    span = max((min(ctx.today, due + timedelta(days=10)) - invoice.issued_on).days, 0)
    first_day = invoice.issued_on + timedelta(days=ctx.rng.randint(0, span))
    if state == "partial":
        part = (total * Decimal(ctx.rng.randint(30, 60)) / 100 // 1000) * 1000
        return [_payment(ctx, invoice, money(part), first_day)]
    if ctx.rng.random() < 0.75:
        return [_payment(ctx, invoice, total, first_day)]
    # Half up front (seña), the rest later.
    deposit = money((total / 2 // 1000) * 1000)
    second_day = min(ctx.today, first_day + timedelta(days=ctx.rng.randint(1, 20)))
    return [
        _payment(ctx, invoice, deposit, first_day),
        _payment(ctx, invoice, total - deposit, second_day),
    ]


def seed_invoices(ctx: SeedContext) -> None:
    drafts: list[tuple[Invoice, list[InvoiceLine]]] = []
    for job, spec in zip(ctx.jobs, ctx.job_specs, strict=True):
        if job.status != Job.Status.DONE or job.completed_at is None:
            continue
        recent = ctx.now - job.completed_at < timedelta(days=3)
        if ctx.rng.random() >= (0.45 if recent else 0.85):
            continue  # not billed yet
        invoice = _invoice_for(ctx, job)
        lines = [
            InvoiceLine(invoice=invoice, **_line_fields(ctx, code, qty))
            for code, qty in _invoice_codes(ctx, job, spec)
        ]
        drafts.append((invoice, lines))
    drafts.sort(key=lambda d: (d[0].issued_on, d[0].created_at))
    invoices = [invoice for invoice, _lines in drafts]
    _number(invoices, INVOICE_NUMBER)
    Invoice.objects.bulk_create(invoices)
    InvoiceLine.objects.bulk_create(line for _invoice, lines in drafts for line in lines)
    states = _payment_states(ctx, invoices)
    Payment.objects.bulk_create(
        payment
        for (invoice, lines), state in zip(drafts, states, strict=True)
        for payment in _payments_for(
            ctx, invoice, sum((ln.total for ln in lines), Decimal(0)), state
        )
    )


def seed_tickets(ctx: SeedContext) -> None:
    done = sorted(
        (job for job in ctx.jobs if job.status == Job.Status.DONE and job.completed_at),
        key=lambda job: job.scheduled_start,
    )
    billed = list(Invoice.objects.filter(organisation=ctx.org).order_by("pk"))
    tickets = []
    for spec in data.TICKETS:
        created = ctx.office_moment(ctx.today - timedelta(days=spec.days_ago))
        matches = [j for j in done if j.service == spec.service_hint and j.scheduled_end < created]
        job = matches[-1] if matches else None
        if job is not None:
            customer = job.customer
        elif spec.reason == "complaint" and billed:
            customer = ctx.rng.choice(billed).customer
        else:
            customer = ctx.rng.choice(ctx.customers)
        tickets.append(
            EscalationTicket(
                organisation=ctx.org,
                customer=customer,
                job=job,
                priority=spec.priority,
                reason=spec.reason,
                summary=spec.summary,
                status=spec.status,
                created_by=ctx.operator,
                created_at=created,
            )
        )
    EscalationTicket.objects.bulk_create(tickets)
