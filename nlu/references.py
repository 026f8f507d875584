"""Document references as the product prints them and as people type them.

- quotes: printed ``P-000027``; typed "presupuesto 27", "el presupuesto P-27", "quote 27",
  "cotización nro 27" → ``P-000027``;
- invoices: printed ``B 0001-00000012`` (letter, point of sale, number); typed "factura B
  0001-00000012", "la factura 12", "invoice #12", "factura A 0001-12" → ``0001-00000012`` and the
  letter when given;
- tickets: printed ``#12``; typed "ticket #12", "reclamo 12", "ticket no. 12" → 12.

A bare number after the word is taken only when it cannot be an amount ("presupuesto 15000",
"facturá 12 lucas") or a date or time ("el reclamo 10 de marzo"): up to four digits, no money or
time word after it. With a marker ("nro", "#", "P-", a letter) any length is taken.
All matching is on folded text; the offsets are the original's, so callers can blank the spans.
"""

from __future__ import annotations

import re
from collections.abc import Container
from dataclasses import dataclass

from common.text import fold_keep_length
from nlu.values import Entities, IntentSpecs

QUOTE_PREFIX, QUOTE_WIDTH = "P-", 6  # as business.services numbers them
POINT_OF_SALE, INVOICE_WIDTH = "0001", 8

_MARKER = r"(?:n[°º]\s*|nro\.?\s*|numero\s*|number\s*|no\.\s*|num\.?\s*|#\s*)"
# What may follow a bare number for it to stay a reference: no money, unit, date or time word.
_NOT_AN_AMOUNT = (
    r"(?![.,]\d)(?!\s*(?:%|\$|pesos|lucas|luca\b|mil\b|k\b|dolares|usd|ars|mas\s+iva|\+\s*iva|"
    r"iva\b|plus\b|hs\b|h\b|horas|hours|:|am\b|pm\b|veces|dias|times|de\s+(?:ene|feb|mar|abr|may|"
    r"jun|jul|ago|sep|oct|nov|dic)|y\s+(?:media|cuarto)))"
)
_SHORT = r"(\d{1,4})\b" + _NOT_AN_AMOUNT  # a bare number: four digits at most

_QUOTE_WORD = r"\b(?:presupuestos?|presu|cotizacion|cotizaciones|quotes?|quotation)"
_QUOTE = re.compile(
    # "P-000027", "P 27" after the word, "P-27" alone
    rf"(?:{_QUOTE_WORD}\s+{_MARKER}?)?\bp\s*-\s*(\d{{1,8}})\b"
    rf"|{_QUOTE_WORD}\s+(?:p\s+)?{_MARKER}(\d{{1,8}})\b"  # "presupuesto nro 27"
    rf"|{_QUOTE_WORD}\s+{_SHORT}"  # "presupuesto 27"
)
_INVOICE_WORD = r"\b(?:factura|facturas|fact\.|fc|invoice|invoices|comprobante)"
_LETTER = r"(?:\b(?P<letter>[abc])\s*-?\s*)"
_INVOICE = tuple(
    re.compile(pattern)
    for pattern in (
        # The printed number after the word: "factura B 0001-00000012", "invoice no. 0001-00000012"
        rf"{_INVOICE_WORD}\s+{_MARKER}?{_LETTER}?\b(?P<pos>\d{{1,4}})\s*-\s*(?P<num>\d{{1,8}})\b",
        # The printed number alone: "B 0001-00000012", "0001-00000012" (a phone is 4-4 digits)
        r"(?:\b(?P<letter>[bc])\s+)?(?<![\d-])\b(?P<pos>\d{4})\s*-\s*(?P<num>\d{8})\b(?!-)",
        # "factura B 12", "factura B nro 12", "invoice #12", "la factura 12"
        rf"{_INVOICE_WORD}\s+{_LETTER}{_MARKER}?(?P<num>\d{{1,8}})\b",
        rf"{_INVOICE_WORD}\s+{_MARKER}(?P<num>\d{{1,8}})\b",
        rf"{_INVOICE_WORD}\s+(?P<num>\d{{1,4}})\b" + _NOT_AN_AMOUNT,
    )
)
_TICKET_WORD = r"\b(?:ticket|tickets|reclamo|reclamos|incidente|incidencia|case)"
_TICKET = re.compile(rf"{_TICKET_WORD}\s+(?:{_MARKER}(\d{{1,7}})\b|{_SHORT})")


@dataclass(frozen=True)
class Reference:
    kind: str  # "quote" | "invoice" | "ticket"
    start: int
    end: int
    value: str  # "P-000027", "0001-00000012", "12"
    letter: str | None = None  # an invoice's letter, when written


def quote_number(digits: str | int) -> str:
    return f"{QUOTE_PREFIX}{int(digits):0{QUOTE_WIDTH}d}"


def invoice_number(number: str | int, point_of_sale: str | int = POINT_OF_SALE) -> str:
    return f"{int(point_of_sale):04d}-{int(number):0{INVOICE_WIDTH}d}"


def _first(match: re.Match[str], groups: tuple[int, ...]) -> str | None:
    for index in groups:
        if match.group(index):
            return match.group(index)
    return None


def find_references(text: str) -> list[Reference]:
    """Every quote, invoice and ticket reference in `text`, in order, never overlapping."""
    folded = fold_keep_length(text)
    found: list[Reference] = []
    for m in _QUOTE.finditer(folded):
        digits = _first(m, (1, 2, 3))
        if digits is not None and int(digits) > 0:
            found.append(Reference("quote", m.start(), m.end(), quote_number(digits)))
    for pattern in _INVOICE:
        for m in pattern.finditer(folded):
            groups = m.groupdict()
            if int(groups["num"]) == 0:
                continue
            value = invoice_number(groups["num"], groups.get("pos") or POINT_OF_SALE)
            letter = groups.get("letter")
            found.append(
                Reference("invoice", m.start(), m.end(), value, letter.upper() if letter else None)
            )
    for m in _TICKET.finditer(folded):
        digits = _first(m, (1, 2))
        if digits is not None and int(digits) > 0:
            found.append(Reference("ticket", m.start(), m.end(), str(int(digits))))
    kept: list[Reference] = []
    for ref in sorted(found, key=lambda r: (r.start, -(r.end - r.start))):
        if not any(k.start < ref.end and ref.start < k.end for k in kept):
            kept.append(ref)
    return kept


_INVOICE_VERB = re.compile(r"\b(?:factur\w*|invoice\w*)")


def intent_by_reference(
    intent: str, text: str, entities: Entities, known: Container[str], specs: IntentSpecs
) -> str:
    """The intent a document reference makes plain when the classifier read the words around
    it ("facturá el presupuesto P-27" is an invoice; "what's the status of ticket 12" is about
    a ticket, which the escalation agent keeps; a named invoice reads as the registry's
    `invoice_named_as`: "¿está paga la factura B 12?"). Only to intents the registry has."""
    wanted = intent
    named_invoice = specs[intent].invoice_named_as if intent in specs else ""
    if entities.quote_number:
        if intent in ("generate_quote", "unknown", "pricing_info") and _INVOICE_VERB.search(
            fold_keep_length(text)
        ):
            wanted = "generate_invoice"
        elif intent in ("unknown", "pricing_info"):
            wanted = "generate_quote"
    elif entities.invoice_number and entities.job_id is None and named_invoice:
        wanted = named_invoice
    elif entities.ticket_id and intent in ("unknown", "search_customer"):
        wanted = "complaint"
    return wanted if wanted in known else intent
