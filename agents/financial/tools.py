"""Tools of the financial agent. `price_list` is shared with the general agent."""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from django.db import transaction
from django.db.models import Q
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop

from agents.context import TurnContext
from agents.lookups import resolve_customer
from agents.payloads import (
    CustomerRow,
    InvoiceRecord,
    PriceList,
    cents,
    customer_row,
    decimal_str,
    invoice_fields,
    price_item_row,
)
from agents.phrasing import money
from agents.registry import (
    Category,
    Preview,
    ToolError,
    ToolResult,
    done,
    get_scoped,
    previews,
    tool,
)
from agents.results import Result
from business import services as _services
from business.models import Customer, Invoice, Job, PriceItem
from business.models import Quote as QuoteModel
from business.selectors import (
    InvoiceRow,
    invoice_row,
    invoice_rows,
    invoices_by_number,
    invoices_with_amounts,
    invoices_with_balance,
    latest_invoice,
    quote_by_number,
    scoped,
)
from common.text import fold
from common.wording import say

IvaRate = Literal["21", "10.5"]
CURRENCY = "ARS"


@dataclass(frozen=True)
class OwedInvoice(InvoiceRecord):
    """An invoice as `payment_status` reports it: whose, and for how long it is owed."""

    customer: str
    days_outstanding: int
    days_overdue: int | None  # None without a due date


@dataclass(frozen=True)
class PaymentStatus(Result):
    """`payment_status`: the invoices asked about and what is owed of them."""

    customer: CustomerRow | None  # the customer asked about
    invoices: tuple[OwedInvoice, ...]
    total_owed: Decimal
    oldest_since: datetime.date | None  # the oldest owing invoice's issue day
    currency: str


@dataclass(frozen=True)
class DocumentLine(Result):
    """One line of a quote or an invoice."""

    description: str
    quantity: Decimal
    unit_price: Decimal  # before IVA
    iva_rate: Decimal
    net: Decimal
    total: Decimal


@dataclass(frozen=True)
class Quote(Result):
    """A quote as the tools report it (one shape for finding and for making one)."""

    id: int
    number: str  # P-000027
    status: str
    customer_id: int
    customer: str
    job_id: int | None
    created_on: datetime.date  # on the organisation's clock
    valid_until: datetime.date | None
    lines: tuple[DocumentLine, ...]
    net: Decimal
    iva: dict[str, Decimal]  # by rate ("21", "10.5")
    iva_total: Decimal
    total: Decimal
    pdf: str


@dataclass(frozen=True)
class FoundQuote(Quote):
    """A quote found by its number: with the invoice made from it ("A 0001-00000012")."""

    invoice: str | None


@dataclass(frozen=True)
class QuoteResult(Result):
    """`quote_create` (a `Quote`) and `quote_find` (a `FoundQuote`)."""

    quote: Quote


@dataclass(frozen=True)
class IssuedInvoice(InvoiceRecord):
    """An invoice as `invoice_create` issued it: its lines and totals (`total` is the
    document's)."""

    customer: str
    lines: tuple[DocumentLine, ...]
    net: Decimal
    iva: dict[str, Decimal]
    iva_total: Decimal


@dataclass(frozen=True)
class InvoiceResult(Result):
    """`invoice_create`."""

    invoice: IssuedInvoice


# Words that say nothing about which service is meant.
_STOPWORDS = frozenset({
    "de", "del", "la", "las", "el", "los", "un", "una", "unos", "unas", "para", "por", "con", "y",
    "en", "al", "a", "the", "of", "for", "and", "with", "an",
})  # fmt: skip


def _tokens(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9ñ]+", fold(text)) if w not in _STOPWORDS and len(w) > 1]


def _related(query_word: str, item_word: str) -> bool:
    # A shared stem of at least 4 letters covers plurals and verb forms ("splits", "instalar").
    if query_word == item_word:
        return True
    stem = min(len(query_word), len(item_word), 6)
    return stem >= 4 and query_word[:stem] == item_word[:stem]


def _score(query: list[str], item: PriceItem) -> int:
    haystack = _tokens(" ".join([item.name, item.name_en, item.keywords, item.category, item.code]))
    return sum(1 for q in query if any(_related(q, h) for h in haystack))


def match_price_items(ctx: TurnContext, text: str) -> list[PriceItem]:
    """Price-list items ranked by how many words of `text` they share (best first)."""
    query = _tokens(text)
    if not query:
        return []
    scored = [(_score(query, item), item) for item in scoped(PriceItem, ctx.organisation)]
    ranked = sorted((pair for pair in scored if pair[0] > 0), key=lambda p: (-p[0], p[1].pk))
    return [item for _score_, item in ranked]


@tool(
    category=Category.SAFE,
    description=gettext_noop(
        "The company's price list (prices in ARS before IVA, with the IVA rate). Optionally "
        "only the items matching a service description or a category."
    ),
    param_docs={
        "query": "Service words to match, e.g. 'instalación split' or 'gas leak'.",
        "category": "Only this category of the price list.",
    },
)
def price_list(
    ctx: TurnContext, *, query: str | None = None, category: str | None = None
) -> ToolResult:
    items = match_price_items(ctx, query) if query else list(scoped(PriceItem, ctx.organisation))
    if category:
        items = [item for item in items if fold(item.category) == fold(category)]
    language = ctx.organisation.language
    return done(
        f"{len(items)} price items",
        PriceList(tuple(price_item_row(item, language) for item in items), CURRENCY),
    )


def _owed(ctx: TurnContext, row: InvoiceRow) -> OwedInvoice:
    since = row.invoice.issued_on
    due = row.invoice.due_on
    return OwedInvoice(
        **invoice_fields(row), customer=row.invoice.customer.name,
        days_outstanding=(ctx.today - since).days,
        days_overdue=max((ctx.today - due).days, 0) if due else None,
    )  # fmt: skip


@tool(
    category=Category.SAFE,
    description=gettext_noop(
        "What is owed: the unpaid or partly paid invoices (balance, issue and due dates, days "
        "outstanding) and the total — for one customer, one invoice, or the whole company."
    ),
    param_docs={
        "customer_id": "Only this customer's invoices.",
        "customer": "Only this customer's invoices, by name (when the id is not known).",
        "invoice_number": "One invoice, by number (e.g. 0001-00000012, or 12).",
        "invoice_letter": "The invoice's letter (A, B or C), when the number comes with one.",
        "latest": "Only the newest invoice (the customer's, when one is given), paid or not.",
    },
)
def payment_status(
    ctx: TurnContext,
    *,
    customer_id: int | None = None,
    customer: str | None = None,
    invoice_number: str | None = None,
    invoice_letter: Literal["A", "B", "C"] | None = None,
    latest: bool = False,
) -> ToolResult:
    who = None
    if customer_id is not None or customer:
        who = resolve_customer(ctx, customer_id, customer)
    if latest and not invoice_number:
        # "mandame la factura de X, la última": the newest one whatever its state, with its PDF.
        newest = latest_invoice(ctx.organisation, who)
        if newest is None:
            raise ToolError("invoice not found" + (f" for {who.name}" if who else ""))
        rows = [newest]
    elif invoice_number:
        # One named invoice is reported whatever its state, so "it is paid" is an answer too.
        found = [
            invoice
            for invoice in invoices_by_number(ctx.organisation, invoice_number, invoice_letter)
            if who is None or invoice.customer_id == who.pk
        ]
        if not found:
            letter = f"{invoice_letter} " if invoice_letter else ""
            raise ToolError(f"invoice {letter}{invoice_number.strip()} not found")
        if len(found) > 1:  # A and B share the number: which one, never a guess
            raise ToolError(
                f"invoice {invoice_number.strip()} exists as "
                + " and ".join(invoice.letter for invoice in found)
                + ": say which letter",
                candidates=[
                    {"id": invoice.pk, "letter": invoice.letter, "number": invoice.number}
                    for invoice in found
                ],
            )
        rows = [invoice_row(found[0])]
    else:
        rows = invoices_with_balance(ctx.organisation, who).rows
    owing = [row for row in rows if row.balance > 0]
    total = sum((row.balance for row in owing), Decimal("0"))
    since = min((row.invoice.issued_on for row in owing), default=None)
    return done(
        f"{len(rows)} invoices, {decimal_str(total)} owed",
        PaymentStatus(
            customer=customer_row(who) if who else None,
            invoices=tuple(_owed(ctx, row) for row in rows),
            total_owed=cents(total), oldest_since=since, currency=CURRENCY,
        ),
    )  # fmt: skip


def _lines(
    ctx: TurnContext,
    services_wanted: list[str],
    items: list[str],
    price: Decimal | None,
    quantity: Decimal,
    iva_rate: str | None,
) -> list[_services.LineInput]:
    """Document lines: price-list codes as given, each service text matched to its best item,
    or one free line at an explicit amount (described by the service text)."""
    rate = Decimal(iva_rate) if iva_rate else None
    lines = [
        _services.LineInput(price_item=code, quantity=quantity, iva_rate=rate) for code in items
    ]
    if price is not None:
        description = "; ".join(services_wanted) or "Servicio"
        return [
            *lines,
            _services.LineInput(
                description=description, quantity=quantity, unit_price=price, iva_rate=rate
            ),
        ]
    for text in services_wanted:
        matches = match_price_items(ctx, text)
        if not matches:
            raise ToolError(
                f"no price-list item matches '{text}': give an amount or a price-list code",
                unmatched=text,
            )
        lines.append(_services.LineInput(price_item=matches[0], quantity=quantity, iva_rate=rate))
    return lines


def _quote_fields(ctx: TurnContext, quote: QuoteModel) -> dict[str, Any]:
    """A `Quote`'s fields, for it and for a `FoundQuote`."""
    return {
        "id": quote.pk, "number": quote.number, "status": quote.status,
        "customer_id": quote.customer_id, "customer": quote.customer.name, "job_id": quote.job_id,
        # The day it was made on the organisation's clock, not UTC's (after 21:00 it differs).
        "created_on": ctx.local(quote.created_at).date(), "valid_until": quote.valid_until,
        "lines": _document_lines(quote), **_totals(quote.totals()),
        "pdf": reverse("quote_pdf", args=[quote.pk]),
    }  # fmt: skip


def _totals(totals: dict[str, Any]) -> dict[str, Any]:
    """A document's net, IVA by rate, IVA and total, to the cent."""
    return {
        "net": cents(totals["net"]),
        "iva": {rate: cents(value) for rate, value in totals["iva"].items()},
        "iva_total": cents(totals["iva_total"]), "total": cents(totals["total"]),
    }  # fmt: skip


def _document_lines(document: QuoteModel | Invoice) -> tuple[DocumentLine, ...]:
    return tuple(
        DocumentLine(
            description=line.description,
            quantity=line.quantity.normalize(),
            unit_price=cents(line.unit_price),
            iva_rate=line.iva_rate.normalize(),
            net=cents(line.net),
            total=cents(line.total),
        )  # fmt: skip
        for line in document.lines.order_by("pk")
    )


_LINE_DOCS = {
    "services": "What is quoted, one entry per service, matched against the price list.",
    "items": "Price-list codes to include (see price_list).",
    "amount": "An explicit net amount (before IVA) instead of the price list.",
    "quantity": "How many of each line (default 1).",
    "iva_rate": "IVA rate: 21 (default) or 10.5.",
}


@tool(
    category=Category.SAFE,
    description=gettext_noop(
        "One quote (presupuesto) by its number (P-000027, or 27): customer, status, lines, "
        "totals, and the invoice made from it, if any."
    ),
    param_docs={"number": "The quote's number as printed (P-000027) or typed (27)."},
)
def quote_find(ctx: TurnContext, *, number: str) -> ToolResult:
    quote = quote_by_number(ctx.organisation, number)
    if quote is None:
        raise ToolError(f"quote {number.strip()} not found")
    # Issued from this quote — or, for a quote invoiced before invoices recorded their quote,
    # for its job.
    made_from = Q(quote=quote) | (Q(job=quote.job_id, quote__isnull=True) if quote.job_id else Q())
    invoiced = (
        scoped(Invoice, ctx.organisation)
        .filter(made_from)
        .exclude(status=Invoice.Status.VOID)
        .values_list("letter", "number")
        .first()
    )
    found = FoundQuote(
        **_quote_fields(ctx, quote), invoice=" ".join(invoiced) if invoiced else None
    )
    return done(f"quote {quote.number} ({quote.status})", QuoteResult(found))


@tool(
    category=Category.SUGGEST,
    description=gettext_noop(
        "Make a quote (presupuesto) for a customer: lines from the price list matched by the "
        "service text (or by code), or one line at an explicit amount; IVA 21% or 10.5%."
    ),
    param_docs={
        "customer_id": "The customer's id.",
        "customer": "The customer's name (when the id is not known).",
        "job_id": "The job the quote is for.",
        **_LINE_DOCS,
        "notes": "Notes printed on the quote.",
    },
)
def quote_create(
    ctx: TurnContext,
    *,
    customer_id: int | None = None,
    customer: str | None = None,
    job_id: int | None = None,
    services: list[str] | None = None,
    items: list[str] | None = None,
    amount: Decimal | None = None,
    quantity: Decimal = Decimal(1),
    iva_rate: IvaRate | None = None,
    notes: str | None = None,
) -> ToolResult:
    job = get_scoped(Job, ctx, job_id, "job") if job_id is not None else None
    if job is not None and customer_id is None and not customer:
        who = job.customer
    else:
        who = resolve_customer(ctx, customer_id, customer)
    wanted = services or ([job.service] if job is not None and not items else [])
    if not wanted and not items and amount is None:
        raise ToolError("say what to quote: services, items or an amount")
    lines = _lines(ctx, wanted, items or [], amount, quantity, iva_rate)
    quote = _services.quote_create(
        organisation=ctx.organisation, customer=who, lines=lines, job=job, notes=notes or "",
        actor=ctx.user,
    )  # fmt: skip
    return done(f"quote {quote.number} created", QuoteResult(Quote(**_quote_fields(ctx, quote))))


@tool(
    category=Category.EXECUTE,
    description=gettext_noop(
        "Issue an invoice (factura) — needs a manager's approval. From a job (its latest "
        "quote), a quote, or explicit lines; letter A for companies with a CUIT, else B."
    ),
    param_docs={
        "job_id": "The job to invoice.",
        "quote_id": "The quote to invoice.",
        "customer_id": "The customer (when there is no job or quote).",
        "customer": "The customer's name (when the id is not known).",
        **_LINE_DOCS,
        "notes": "Notes printed on the invoice.",
    },
)
def invoice_create(
    ctx: TurnContext,
    *,
    job_id: int | None = None,
    quote_id: int | None = None,
    customer_id: int | None = None,
    customer: str | None = None,
    services: list[str] | None = None,
    items: list[str] | None = None,
    amount: Decimal | None = None,
    quantity: Decimal = Decimal(1),
    iva_rate: IvaRate | None = None,
    notes: str | None = None,
) -> ToolResult:
    job = get_scoped(Job, ctx, job_id, "job") if job_id is not None else None
    quote = get_scoped(QuoteModel, ctx, quote_id, "quote") if quote_id is not None else None
    who: Customer | None = None
    if customer_id is not None or customer:
        who = resolve_customer(ctx, customer_id, customer)
    lines = None
    if services or items or amount is not None:
        lines = _lines(ctx, services or [], items or [], amount, quantity, iva_rate)
    invoice = _services.invoice_create(
        organisation=ctx.organisation, customer=who, job=job, quote=quote, lines=lines,
        notes=notes or "", actor=ctx.user,
    )  # fmt: skip
    row = invoice_rows(invoices_with_amounts(ctx.organisation).filter(pk=invoice.pk))[0]
    totals = _totals(invoice.totals())
    issued = IssuedInvoice(
        **{**invoice_fields(row), "total": totals.pop("total")},
        customer=invoice.customer.name, lines=_document_lines(invoice), **totals,
    )  # fmt: skip
    return done(f"invoice {invoice.letter} {invoice.number} issued", InvoiceResult(issued))


@previews(invoice_create)
def _invoice_preview(ctx: TurnContext, **arguments: Any) -> Preview:
    """The invoice as it would be issued — computed in a transaction that is rolled back."""
    with transaction.atomic():
        result = invoice_create(ctx, **arguments)
        transaction.set_rollback(True)
    issued = InvoiceResult.of(result)
    if issued is None:  # invoice_create raises what stops it: a result is always one
        raise ToolError(result.error or "the invoice could not be computed")
    invoice = issued.invoice
    summary = (
        _(
            "Issue invoice %(letter)s to %(customer)s for job #%(job)s for %(total)s "
            "(%(lines)s line(s))"
        )
        if invoice.job_id
        else _("Issue invoice %(letter)s to %(customer)s for %(total)s (%(lines)s line(s))")
    )

    def summary_in(language: str) -> str:
        return say(
            language,
            summary,
            letter=invoice.letter,
            customer=invoice.customer,
            job=invoice.job_id,
            total=money(invoice.total, language),
            lines=len(invoice.lines),
        )

    json = issued.as_json()["invoice"]
    return Preview(
        summary_es=summary_in("es"),
        summary_en=summary_in("en"),
        relies_on={
            "customer_id": invoice.customer_id,
            "job_id": invoice.job_id,
            "letter": invoice.letter,
            "lines": [
                [line["description"], line["quantity"], line["unit_price"]]
                for line in json["lines"]
            ],  # fmt: skip
            "total": json["total"],
        },
        links=[{"kind": "customer", "id": invoice.customer_id, "label": invoice.customer}]
        + (
            [{"kind": "job", "id": invoice.job_id, "label": f"#{invoice.job_id}"}]
            if invoice.job_id
            else []
        ),  # fmt: skip
    )
