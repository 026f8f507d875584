"""Handlers of the financial agent (O11): quotes, invoices and what customers owe.

Amounts are `Decimal` end to end and shown as ARS ($ 1.234,56 in Spanish, $1,234.56 in English).
An amount in the message is the net ("640.000 más IVA") unless it says the IVA is included.
An invoice is an *execute* action: it is filed for a manager's approval, and the reply gives the
totals it will carry, computed here with the same per-line rounding as the documents.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext_lazy, pgettext_lazy

from agents.base import Mutation, Outcome, Runner, Step, handles
from agents.financial.tools import (
    DocumentLine,
    FoundQuote,
    InvoiceResult,
    OwedInvoice,
    PaymentStatus,
    Quote,
    QuoteResult,
)
from agents.payloads import CustomerRow, JobRow, JobsFound, PriceList
from agents.phrasing import (
    Found,
    ask,
    bullets,
    call_for_customer,
    customer_problem,
    day,
    failed,
    full_date,
    held,
    held_id,
    job_line,
    job_short,
    money,
    not_enabled,
    percent,
    with_note,
)
from agents.registry import ToolResult
from agents.subjects import CustomerRef, customer_ref, job_ref, same_person
from business.models import money as round_money
from common.text import fold
from nlu.reference import refers_to_existing

DEFAULT_IVA = Decimal("21")
LISTED = 10  # invoices or debtors listed in one answer
PRICE_ITEMS_SHOWN = 6
MIN_SHARED_STEMS = 2  # a service read from the message's own words must share this many

_SERVICE_JOINS = re.compile(r"\s*(?:,|\+|\by\b|\band\b)\s*", re.IGNORECASE)
_INVOICE_NUMBER = re.compile(r"\b(\d{4}-\d{8})\b")
_INVOICE_VERB = re.compile(r"\b(?:factur\w*|invoice\w*|bill\b|bill (?:it|them))")
_SEND_VERB = re.compile(
    r"\b(?:mand\w*|envi\w*|pas\w*le|reenvi\w*|send\w*|email\w*|mail\w*|forward\w*)"
)
QUOTE_STATUS = {
    "draft": pgettext_lazy("quote status", "draft"),
    "sent": pgettext_lazy("quote status", "sent"),
    "accepted": pgettext_lazy("quote status", "accepted"),
    "rejected": pgettext_lazy("quote status", "rejected"),
}
_REDUCED_IVA = re.compile(r"\b10[.,]5\s*%?")
_IVA_INCLUDED = re.compile(
    r"\b(?:iva incluido|con iva|incluye iva|final|vat included|incl\w* vat)\b"
)


@dataclass(frozen=True)
class Line:
    description: str
    quantity: Decimal
    unit_price: Decimal
    iva_rate: Decimal

    @property
    def net(self) -> Decimal:
        return round_money(self.quantity * self.unit_price)

    @property
    def iva(self) -> Decimal:
        # The same rounding as business.models.DocumentLine, so the totals shown before an
        # approval are the ones the invoice will have.
        return round_money(self.net * self.iva_rate / Decimal(100))


def _lines_of(payload: list[dict[str, Any]]) -> list[Line]:
    """Lines of a document as a quote's mutation keeps them (its tool's JSON: amounts as
    strings)."""
    return [
        Line(
            row["description"],
            Decimal(row["quantity"]),
            Decimal(row["unit_price"]),
            Decimal(row["iva_rate"]),
        )
        for row in payload
    ]


def _totals_text(runner: Runner, lines: list[Line]) -> str:
    language = runner.language
    net = sum((line.net for line in lines), Decimal("0"))
    by_rate: dict[Decimal, Decimal] = {}
    for line in lines:
        by_rate[line.iva_rate] = by_rate.get(line.iva_rate, Decimal("0")) + line.iva
    iva = " + ".join(
        f"IVA {percent(rate, language)} {money(v, language)}" for rate, v in by_rate.items()
    )
    total = net + sum(by_rate.values(), Decimal("0"))
    return runner.say(
        _("net %(net)s + %(iva)s = total %(total)s"),
        net=money(net, language),
        iva=iva,
        total=money(total, language),
    )


def _rate_in(text: str) -> str | None:
    """ "10.5" when the text asks for the reduced IVA rate; None leaves each item's own rate."""
    return "10.5" if _REDUCED_IVA.search(text) else None


def _net_amount(step: Step) -> Decimal | None:
    """The entity amount as a net amount: "15 lucas" or "640.000 más IVA" are net already;
    "181.500 IVA incluido" is a total, so the IVA is taken out (to the cent)."""
    amount = step.entities.amount
    if amount is None:
        return None
    if _IVA_INCLUDED.search(fold(step.text)) and not re.search(r"\bmas iva\b", fold(step.text)):
        rate = Decimal(_rate_in(step.text) or DEFAULT_IVA)
        return round_money(Decimal(amount) / (1 + rate / Decimal(100)))
    return Decimal(amount)


# --- generate_quote -------------------------------------------------------------------------


@handles("generate_quote")
def generate_quote(step: Step, runner: Runner) -> Outcome:
    if step.entities.quote_number:
        # "mandale el presupuesto P-000027", "facturá el presupuesto 27": an existing quote.
        if _INVOICE_VERB.search(fold(step.text)):
            return _invoice_named_quote(step, runner)
        return _show_named_quote(step, runner)
    who = customer_ref(step, runner)
    if who is None:
        return ask(
            runner, runner.say(_("Which customer is the quote for?")), error="missing customer"
        )
    arguments = _quote_arguments(step, runner, who)
    if arguments is None:
        return ask(
            runner,
            runner.say(
                _(
                    "What should I quote? Tell me the service (e.g. “split installation”) or the "
                    "amount (e.g. “15000 plus IVA”)."
                )
            ),
            error="missing service",
        )
    result, chosen, note = call_for_customer(step, runner, "quote_create", arguments)
    if chosen is not None:
        who = CustomerRef(int(chosen["id"]), str(chosen["name"]), "named")
        arguments = {**{k: v for k, v in arguments.items() if k != "customer"}, **who.args()}
    return with_note(_quote_result(step, runner, who, arguments, result), note)


def _quote_lines(quote: Quote) -> list[Line]:
    return [Line(d.description, d.quantity, d.unit_price, d.iva_rate) for d in quote.lines]


def _quote_result(
    step: Step, runner: Runner, who: CustomerRef, arguments: dict[str, Any], result: ToolResult
) -> Outcome:
    if "unmatched" in result.data and len(arguments.get("services", [])) > 1:
        # "aire y calefacción" may be one service the list names as a whole: try it unsplit.
        result = runner.call("quote_create", **{**arguments, "services": [step.entities.service]})
    if (approval := held_id(result)) is not None:
        return held(runner, approval, runner.say(_("The quote for %(name)s"), name=who.name))
    if not result.ok:
        problem = customer_problem(runner, who.name, result)
        if problem is not None:
            return problem
        if "unmatched" in result.data:
            return _unpriced(runner, str(result.data["unmatched"]), result.error)
    if (made := QuoteResult.of(result)) is None:
        return failed(runner, result, runner.say(_("I couldn't make the quote")))
    return _quoted(runner, who, made.quote)


def _services_of(phrase: str) -> list[str]:
    """ "instalación de split y carga de gas" → one quote line per service."""
    parts = [part.strip() for part in _SERVICE_JOINS.split(phrase) if part.strip()]
    return parts or [phrase]


def _quote_arguments(step: Step, runner: Runner, who: CustomerRef) -> dict[str, Any] | None:
    """quote_create's arguments, or None when the message says neither service nor amount."""
    arguments: dict[str, Any] = {**who.args()}
    service, amount = step.entities.service, _net_amount(step)
    booked = runner.earlier("job")
    # The job booked earlier in this turn is the one being quoted when it is this customer's.
    if booked is not None and who.source == "earlier" and booked.data.get("customer_id") == who.id:
        arguments["job_id"] = booked.id
    if amount is not None:
        arguments["amount"] = str(amount)
        if service:
            arguments["services"] = [service]
    elif service:
        arguments["services"] = _services_of(service)
    elif "job_id" not in arguments:
        listed = _listed_service_in(step.text, runner, who)
        if listed is None:
            return None
        arguments["services"] = [listed]
    if rate := _rate_in(step.text):
        arguments["iva_rate"] = rate
    return arguments


def _stems(text: str) -> set[str]:
    """Accent-folded word stems: five letters cover plurals and «instalación»/«instalar»."""
    words = re.findall(r"[a-z0-9]+", fold(text))
    return {word if word.isdigit() else word[:5] for word in words if len(word) > 2}


def _listed_service_in(text: str, runner: Runner, who: CustomerRef) -> str | None:
    """The price-list item the message's own words name, when no service was extracted.

    «…para La Espiga por la instalación de un split de 3000 frigorías»: the extractor may miss
    the service, but the words are there. Only an item that shares at least two stems with the
    message, and more than any other item, is taken; anything less is asked about.
    """
    words = _stems(text) - _stems(who.name)
    if len(words) < 2:
        return None
    prices = PriceList.of(runner.call("price_list", query=text))
    if prices is None:
        return None
    ranked = sorted(
        ((len(words & _stems(item.name)), item.name) for item in prices.items), reverse=True
    )
    if not ranked or ranked[0][0] < MIN_SHARED_STEMS:
        return None
    if len(ranked) > 1 and ranked[1][0] == ranked[0][0]:
        return None  # two items fit as well: the message does not say which
    return ranked[0][1]


def _unpriced(runner: Runner, service: str, error: str) -> Outcome:
    """The service is not in the price list: ask for an amount, showing what the list has."""
    prices = PriceList.of(runner.call("price_list"))
    items = prices.items[:PRICE_ITEMS_SHOWN] if prices else ()
    listing = bullets(f"{i.name}: {money(i.unit_price, runner.language)}" for i in items)
    text = runner.say(
        _(
            "“%(service)s” is not in the price list, so I didn't make the quote. Tell me the "
            "amount (e.g. “15000 plus IVA”)."
        ),
        service=service,
    )
    if items:
        shown = runner.say(_("The price list has, for example:\n%(listing)s"), listing=listing)
        text += "\n" + shown
    return Outcome(
        text=text,
        success=False,
        error=error,
    )


def _document_lines(runner: Runner, lines: tuple[DocumentLine, ...]) -> str:
    language = runner.language
    return bullets(
        f"{line.description}: {line.quantity:f} × {money(line.unit_price, language)} "
        f"(IVA {percent(line.iva_rate, language)})"
        for line in lines
    )


def _pdf(link: str) -> str:
    """The document's download link, on a line of its own under the answer."""
    return f"\nPDF: {link}" if link else ""


def _quoted(runner: Runner, who: CustomerRef, quote: Quote) -> Outcome:
    values = {
        "number": quote.number,
        "customer": quote.customer,
        "lines": _document_lines(runner, quote.lines),
        "totals": _totals_text(runner, _quote_lines(quote)),
    }
    if quote.valid_until:
        made = _(
            "Done: I made quote %(number)s for %(customer)s (valid until %(valid)s):\n"
            "%(lines)s\nTotal: %(totals)s."
        )
        values["valid"] = full_date(quote.valid_until, runner.language)
    else:
        made = _("Done: I made quote %(number)s for %(customer)s:\n%(lines)s\nTotal: %(totals)s.")
    text = runner.say(made, **values) + _pdf(quote.pdf)
    mutations = [_quote_mutation(quote)]
    if who.source == "named":
        mutations.append(Mutation(kind="customer", id=quote.customer_id, label=quote.customer))
    return Outcome(text=text, mutations=mutations)


# --- a quote named by its number --------------------------------------------------------------


def _named_quote(step: Step, runner: Runner) -> tuple[FoundQuote | None, Outcome | None]:
    """The organisation's quote the message names by number, or the reply saying why not:
    no such number (another organisation's reads the same), or it is another customer's."""
    number = str(step.entities.quote_number)
    result = runner.call("quote_find", number=number)
    found = QuoteResult.of(result)
    if found is None or not isinstance(found.quote, FoundQuote):
        disabled = not_enabled(
            runner, result, runner.say(_("I can't look up quote %(number)s"), number=number)
        )
        return None, disabled or failed(
            runner, result, runner.say(_("I couldn't find quote %(number)s"), number=number)
        )
    quote = found.quote
    named = (step.entities.customer or "").strip()
    if named and not same_person(named, quote.customer):
        mismatch = Outcome(
            text=runner.say(
                _(
                    "Quote %(number)s belongs to %(customer)s, not %(named)s: I did nothing with "
                    "it. Please check the number."
                ),
                number=quote.number,
                customer=quote.customer,
                named=named,
            ),
            success=False,
            error="quote of another customer",
        )
        return None, mismatch
    return quote, None


def _quote_mutation(quote: Quote) -> Mutation:
    """The quote as the conversation remembers it (JSON: its lines as the tool gave them)."""
    return Mutation(
        kind="quote",
        id=quote.id,
        label=quote.number,
        data={
            "customer_id": quote.customer_id,
            "customer": quote.customer,
            "job_id": quote.job_id,
            "lines": [line.as_json() for line in quote.lines],
        },
    )


def _show_named_quote(step: Step, runner: Runner) -> Outcome:
    quote, problem = _named_quote(step, runner)
    if problem is not None or quote is None:
        return problem or ask(runner, runner.say(_("Which quote?")), error="no quote")
    status = QUOTE_STATUS.get(quote.status)
    text = runner.say(
        _(
            "Quote %(number)s for %(customer)s (%(status)s, of %(created)s):\n%(lines)s\n"
            "Total: %(totals)s."
        ),
        number=quote.number,
        customer=quote.customer,
        status=runner.say(status) if status is not None else quote.status,
        created=full_date(quote.created_on, runner.language),
        lines=_document_lines(runner, quote.lines),
        totals=_totals_text(runner, _quote_lines(quote)),
    )
    if quote.invoice:
        text += " " + runner.say(
            _("It is already invoiced (invoice %(invoice)s)."), invoice=quote.invoice
        )
    if _SEND_VERB.search(fold(step.text)):
        text += " " + runner.say(
            _("I don't send quotes from here: it is under Quotes, ready to send to %(customer)s."),
            customer=quote.customer,
        )
    text += _pdf(quote.pdf)
    mutations = [
        _quote_mutation(quote),
        Mutation(kind="customer", id=quote.customer_id, label=quote.customer),
    ]
    return Outcome(text=text, mutations=mutations)


def _invoice_named_quote(step: Step, runner: Runner) -> Outcome:
    """ "facturá el presupuesto P-000027": exactly its lines, unless it was rejected or is
    already invoiced."""
    quote, problem = _named_quote(step, runner)
    if problem is not None or quote is None:
        return problem or ask(runner, runner.say(_("Which quote?")), error="no quote")
    if quote.status == "rejected":
        return Outcome(
            text=runner.say(
                _("Quote %(number)s for %(customer)s was rejected: I won't invoice it."),
                number=quote.number,
                customer=quote.customer,
            ),
            success=False,
            error="quote rejected",
        )
    if quote.invoice:
        return Outcome(
            text=runner.say(
                _(
                    "Quote %(number)s is already invoiced (invoice %(invoice)s): I didn't make "
                    "another one."
                ),
                number=quote.number,
                invoice=quote.invoice,
            ),
            success=False,
            error="quote already invoiced",
        )
    outcome = _invoice_quote(runner, _quote_mutation(quote))
    outcome.mutations.append(Mutation(kind="customer", id=quote.customer_id, label=quote.customer))
    return outcome


# --- generate_invoice -----------------------------------------------------------------------


@handles("generate_invoice")
def generate_invoice(step: Step, runner: Runner) -> Outcome:
    if step.entities.quote_number:
        return _invoice_named_quote(step, runner)
    if step.entities.invoice_number and step.entities.job_id is None:
        # An invoice named by its number exists already: the question is about it (paid?).
        return payment_status(step, runner)
    quote = runner.earlier("quote")
    named = step.entities.customer
    quoted_for = str(quote.data.get("customer") or "") if quote else ""
    if (
        quote is not None
        and step.entities.amount is None
        and (not named or same_person(named, quoted_for))
    ):
        return _invoice_quote(runner, quote)
    found = _job_to_invoice(step, runner)
    if found.problem is not None or not isinstance(found.job, JobRow):
        return found.problem or ask(
            runner, runner.say(_("Which job should I invoice?")), error="missing job"
        )
    return with_note(_invoice_job(step, runner, found.job), found.note)


def _invoice_job(step: Step, runner: Runner, job: JobRow) -> Outcome:
    if job.status == "cancelled":
        return Outcome(
            text=runner.say(
                _("Job %(job)s is cancelled: I won't invoice it."),
                job=job_line(job, runner.language),
            ),
            success=False,
            error=f"job {job.id} is cancelled",
        )
    lines, extra, problem = _invoice_lines(step, runner, job)
    if problem is not None:
        return problem
    result = runner.call("invoice_create", job_id=job.id, **extra)
    return _invoice_result(runner, result, job, lines)


def _invoice_quote(runner: Runner, quote: Mutation) -> Outcome:
    """A quote made earlier in this turn: invoice exactly its lines."""
    arguments: dict[str, Any] = {"quote_id": quote.id}
    result = runner.call("invoice_create", **arguments)
    lines = _lines_of(quote.data.get("lines", []))
    subject = runner.say(
        _("The invoice for quote %(quote)s of %(customer)s"),
        quote=quote.label,
        customer=quote.data.get("customer", ""),
    )
    return _filed(runner, result, subject, lines)


def _job_to_invoice(step: Step, runner: Runner) -> Found:
    """The job booked earlier this turn, the one under discussion, or the customer's latest done
    job — with its details (one `jobs_find`); and the note of a best-effort customer pick."""
    known = job_ref(step, runner)
    if known is not None:
        result = runner.call("jobs_find", job_id=known)
        if (found := JobsFound.of(result)) is None or not found.jobs:
            missing = failed(runner, result, runner.say(_("I couldn't find job #%(id)s"), id=known))
            return Found(problem=missing)
        return Found(found.jobs[0])
    who = customer_ref(step, runner)
    if who is None:
        question = ask(
            runner,
            runner.say(_("Which job should I invoice? Tell me the customer.")),
            error="missing customer",
        )
        return Found(problem=question)
    on = step.entities.date
    # "el trabajo de hoy": that day's job, whatever its state, never the latest one instead.
    arguments = {**who.args(), **({"date": on} if on else {"status": "done"})}
    result, chosen, note = call_for_customer(step, runner, "jobs_find", arguments)
    if chosen is not None:
        who = CustomerRef(int(chosen["id"]), str(chosen["name"]), "named")
    if (listed := JobsFound.of(result)) is None:
        problem = customer_problem(runner, who.name, result) or failed(
            runner, result, runner.say(_("I couldn't look up the jobs"))
        )
        return Found(problem=problem)
    jobs = list(listed.jobs)  # newest first
    if on is not None:
        jobs = [job for job in jobs if job.status != "cancelled"]
    if not jobs:
        return Found(problem=_nothing_to_invoice(runner, who, on))
    if on is not None and len(jobs) > 1:
        # Two jobs that day: which one is the operator's call, never the newest by default.
        listing = bullets(job_line(job, runner.language) for job in jobs)
        question = ask(
            runner,
            runner.say(
                _(
                    "%(name)s has %(count)s jobs on %(day)s:\n%(listing)s\nWhich one should I "
                    "invoice? Tell me its number (e.g. “#%(id)s”)."
                ),
                name=who.name,
                count=len(jobs),
                day=day(on, runner.language),
                listing=listing,
                id=jobs[0].id,
            ),
            error="several jobs that day",
        )
        return Found(problem=question)
    inferred = _inferred_job(runner, jobs[0], who, on)
    return Found(jobs[0], note="\n".join(part for part in (note, inferred) if part))


def _inferred_job(runner: Runner, job: JobRow, who: CustomerRef, on: datetime.date | None) -> str:
    """Which job "el trabajo de hoy" / "el último" was taken to be, in so many words."""
    label = job_short(job, runner.language)
    if on is None:
        return runner.say(
            _("I took %(name)s's latest finished job: %(label)s."), name=who.name, label=label
        )
    today = runner.today
    relative = {
        today: _("I took %(name)s's job from today: %(label)s."),
        today + datetime.timedelta(days=1): _("I took %(name)s's job from tomorrow: %(label)s."),
        today - datetime.timedelta(days=1): _("I took %(name)s's job from yesterday: %(label)s."),
    }
    took = relative.get(on, _("I took %(name)s's job on %(day)s: %(label)s."))
    return runner.say(took, name=who.name, label=label, day=day(on, runner.language))


def _nothing_to_invoice(runner: Runner, who: CustomerRef, on: datetime.date | None) -> Outcome:
    if on is not None:
        text = runner.say(
            _("I found no job for %(name)s on %(day)s: I invoiced nothing."),
            name=who.name,
            day=day(on, runner.language),
        )
        return Outcome(text=text, success=False, error="no job that day")
    return Outcome(
        text=runner.say(_("I found no finished jobs for %(name)s to invoice."), name=who.name),
        success=False,
        error="no done job",
    )


def _invoice_lines(
    step: Step, runner: Runner, job: JobRow
) -> tuple[list[Line], dict[str, Any], Outcome | None]:
    """(the lines, invoice_create's line arguments, or a reply when the price is unknown)."""
    rate = _rate_in(step.text)
    amount = _net_amount(step)
    if amount is not None:
        extra: dict[str, Any] = {"amount": str(amount), "services": [job.service]}
        if rate:
            extra["iva_rate"] = rate
        return [Line(job.service, Decimal(1), amount, Decimal(rate or DEFAULT_IVA))], extra, None
    prices = PriceList.of(runner.call("price_list", query=job.service))
    if prices is None or not prices.items:
        return (
            [],
            {},
            Outcome(
                text=runner.say(
                    _(
                        "“%(service)s” is not in the price list, so I didn't file the invoice. "
                        "Tell me the amount to invoice (net, before IVA)."
                    ),
                    service=job.service,
                ),
                success=False,
                error="no price for the job's service",
            ),
        )
    item = prices.items[0]
    extra = {"items": [item.code]}
    if rate:
        extra["iva_rate"] = rate
    line_rate = Decimal(rate) if rate else item.iva_rate
    return [Line(item.name, Decimal(1), item.unit_price, line_rate)], extra, None


def _invoice_result(runner: Runner, result: ToolResult, job: JobRow, lines: list[Line]) -> Outcome:
    subject = runner.say(
        _("The invoice to %(customer)s for job %(job)s"),
        customer=job.customer,
        job=job_short(job, runner.language),
    )
    outcome = _filed(runner, result, subject, lines)
    outcome.mutations.append(
        Mutation(
            kind="job",
            id=job.id,
            label=f"#{job.id} {job.service}",
            data={"customer_id": job.customer_id, "customer": job.customer},
        )
    )
    return outcome


def _filed(runner: Runner, result: ToolResult, subject: str, lines: list[Line]) -> Outcome:
    """The invoice call's outcome: held for approval (the usual case), issued, or refused."""
    totals = _totals_text(runner, lines) if lines else ""
    if (approval := held_id(result)) is not None:
        outcome = held(runner, approval, subject)
        if totals:
            outcome.text += " " + runner.say(_("Amounts: %(totals)s."), totals=totals)
        return outcome
    if (issued := InvoiceResult.of(result)) is None:
        return failed(runner, result, runner.say(_("I couldn't issue the invoice")))
    invoice = issued.invoice
    return Outcome(
        text=runner.say(
            _("Done: I issued invoice %(letter)s %(number)s to %(customer)s: total %(total)s."),
            letter=invoice.letter,
            number=invoice.number,
            customer=invoice.customer,
            total=money(invoice.total, runner.language),
        )
        + _pdf(invoice.pdf)
    )


# --- payment_status -------------------------------------------------------------------------


# The answer to "¿la A o la B?": a capital letter after "la", "letra", "the" or "letter".
_LETTER_ANSWER = re.compile(r"\b(?:[Ll]a|[Ll]etra|[Tt]he|[Ll]etter)\s+([ABC])\b")


@handles("payment_status")
def payment_status(step: Step, runner: Runner) -> Outcome:
    printed = _INVOICE_NUMBER.search(step.text)
    number = step.entities.invoice_number or (printed.group(1) if printed else None)
    letter = step.entities.invoice_letter if step.entities.invoice_number else None
    if number and not letter and (answered := _LETTER_ANSWER.search(step.text)):
        letter = answered.group(1)  # "la B", the answer to "¿la A o la B?"
    who = customer_ref(step, runner)
    if number and who is not None and who.source != "named":
        who = None  # the invoice says whose it is; a customer remembered from before does not
    arguments: dict[str, Any] = {**(who.args() if who else {})}
    # "mandame la factura de X, la última": the newest invoice and its PDF, not the debt.
    latest = not number and refers_to_existing(step.text)
    if number:
        arguments["invoice_number"] = number
        if letter:
            arguments["invoice_letter"] = letter
    elif latest:
        arguments["latest"] = True
    result, chosen, note = call_for_customer(step, runner, "payment_status", arguments)
    if chosen is not None:
        who = CustomerRef(int(chosen["id"]), str(chosen["name"]), "named")
    if not result.ok:
        letters = [str(c["letter"]) for c in result.data.get("candidates", []) if "letter" in c]
        if number and len(letters) > 1:  # the same number in two letters: which one
            which = letters[0]
            for other in letters[1:]:
                which = runner.say(
                    pgettext_lazy("invoice letters", "%(first)s or %(second)s"),
                    first=which,
                    second=other,
                )
            return ask(
                runner,
                runner.say(
                    _("There is more than one invoice %(number)s: %(letters)s?"),
                    number=number,
                    letters=which,
                ),
                error="ambiguous invoice number",
                slot="invoice_letter",
            )
        problem = customer_problem(runner, who.name, result) if who else None
        if problem is None and latest:
            none_found = (
                runner.say(_("I found no invoices for %(name)s"), name=who.name)
                if who
                else runner.say(_("I found no invoices"))
            )
            problem = failed(runner, result, none_found)
        if problem is None and number:
            written = f"{letter} {number}" if letter else number
            not_found = (
                runner.say(
                    _("I couldn't find invoice %(invoice)s of %(name)s"),
                    invoice=written,
                    name=who.name,
                )
                if who
                else runner.say(_("I couldn't find invoice %(invoice)s"), invoice=written)
            )
            problem = failed(runner, result, not_found)
        return problem or failed(runner, result, runner.say(_("I couldn't check the payments")))
    status = PaymentStatus.of(result)
    if status is None:  # a screened-out result
        return failed(runner, result, runner.say(_("I couldn't check the payments")))
    if (number or latest) and status.invoices:
        return with_note(_one_invoice(runner, status.invoices[0]), note)
    if who is not None and status.customer is not None:
        return with_note(_customer_debt(runner, status, status.customer), note)
    return _company_debt(runner, status)


def _invoice_line(runner: Runner, invoice: OwedInvoice) -> str:
    language = runner.language
    overdue = invoice.days_overdue or 0
    parts = [
        runner.say(
            _("Invoice %(invoice)s of %(issued)s: %(balance)s due of %(total)s"),
            invoice=invoice.label,
            issued=full_date(invoice.issued_on, language),
            balance=money(invoice.balance, language),
            total=money(invoice.total, language),
        )
    ]
    if invoice.paid > 0:
        parts.append(runner.say(_("paid %(amount)s"), amount=money(invoice.paid, language)))
    if overdue:
        parts.append(runner.say(_("%(days)s days overdue"), days=overdue))
    return ", ".join(parts)


def _one_invoice(runner: Runner, invoice: OwedInvoice) -> Outcome:
    outcome = _invoice_state(runner, invoice)
    outcome.text += _pdf(invoice.pdf)
    return outcome


def _invoice_state(runner: Runner, invoice: OwedInvoice) -> Outcome:
    if invoice.state == "paid":
        return Outcome(
            text=runner.say(
                _("Invoice %(letter)s %(number)s of %(customer)s is paid (%(total)s)."),
                letter=invoice.letter,
                number=invoice.number,
                customer=invoice.customer,
                total=money(invoice.total, runner.language),
            )
        )
    if invoice.state == "void":
        return Outcome(text=runner.say(_("Invoice %(number)s is void."), number=invoice.number))
    return Outcome(text=f"{invoice.customer}: {_invoice_line(runner, invoice)}.")


def _customer_debt(runner: Runner, status: PaymentStatus, customer: CustomerRow) -> Outcome:
    language = runner.language
    mutation = Mutation(kind="customer", id=customer.id, label=customer.name)
    invoices = status.invoices
    if not invoices or status.oldest_since is None:
        return Outcome(
            text=runner.say(_("%(name)s is paid up: no unpaid invoices."), name=customer.name),
            mutations=[mutation],
        )
    listing = bullets(_invoice_line(runner, i) for i in invoices[:LISTED])
    since = full_date(status.oldest_since, language)
    total = money(status.total_owed, language)
    return Outcome(
        text=runner.say(
            _("%(name)s owes %(total)s on %(invoices)s, since %(since)s:\n%(listing)s"),
            name=customer.name,
            total=total,
            invoices=_invoices(runner, len(invoices)),
            since=since,
            listing=listing,
        ),
        mutations=[mutation],
    )


def _company_debt(runner: Runner, status: PaymentStatus) -> Outcome:
    """Nobody named: who owes what, biggest debts first."""
    language = runner.language
    invoices = status.invoices
    if not invoices:
        return Outcome(text=runner.say(_("There are no unpaid invoices: nobody owes anything.")))
    debts: dict[str, tuple[Decimal, datetime.date]] = {}
    for invoice in invoices:
        owed, since = debts.get(invoice.customer, (Decimal("0"), invoice.issued_on))
        debts[invoice.customer] = (owed + invoice.balance, min(since, invoice.issued_on))
    ranked = sorted(debts.items(), key=lambda item: (-item[1][0], item[0]))[:LISTED]
    listing = bullets(
        runner.say(
            _("%(name)s: %(owed)s (since %(since)s)"),
            name=name,
            owed=money(owed, language),
            since=full_date(since, language),
        )
        for name, (owed, since) in ranked
    )
    return Outcome(
        text=runner.say(
            _("You are owed %(total)s on %(invoices)s from %(customers)s:\n%(listing)s"),
            total=money(status.total_owed, language),
            invoices=_invoices(runner, len(invoices)),
            customers=runner.say(
                ngettext_lazy("%(count)d customer", "%(count)d customers", len(debts)),
                count=len(debts),
            ),
            listing=listing,
        )
    )


def _invoices(runner: Runner, number: int) -> str:
    """ "1 invoice" / "3 invoices" in the reply's language."""
    return runner.say(
        ngettext_lazy("%(count)d invoice", "%(count)d invoices", number), count=number
    )
