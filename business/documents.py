"""Quote and invoice PDFs (E5): a Django template rendered to PDF by WeasyPrint.

WeasyPrint lays out HTML and CSS, so a document is an ordinary template (`business/document_pdf.
html`) that designers can edit like any page; it needs Pango on the machine (see the README).
These are *not* fiscal vouchers: there is no AFIP integration (no CAE), and every page says so.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.template.loader import render_to_string
from django.utils import translation

from business.models import Invoice, Organisation, Quote

LANGUAGES = ("es", "en")


def document_language(requested: str | None, fallback: str) -> str:
    """`?lang=es|en` wins; otherwise the request's language; Spanish when neither is known."""
    for candidate in (requested, fallback):
        short = (candidate or "").split("-")[0].split("_")[0].lower()
        if short in LANGUAGES:
            return short
    return "es"


def amount_in_words(amount: Decimal, lang: str) -> str:
    """The total as a voucher writes it: "pesos ciento dos mil ochocientos cincuenta con
    00/100", or "one hundred two thousand eight hundred fifty pesos and 00/100"."""
    from num2words import num2words  # noqa: PLC0415 - only documents need it

    whole = int(abs(amount))
    cents = int((abs(amount) - whole) * 100)
    if lang == "en":
        words = num2words(whole, lang="en").replace(",", "").replace(" and ", " ")
        return f"{words} pesos and {cents:02d}/100"
    return f"pesos {num2words(whole, lang='es')} con {cents:02d}/100"


def _context(document: Quote | Invoice, lang: str) -> dict[str, Any]:
    organisation: Organisation = document.organisation
    totals = document.totals()
    # IVA that is charged, by rate (a letter C invoice charges none: no IVA lines at all).
    iva_lines = sorted(
        ((Decimal(r), a) for r, a in totals["iva"].items() if Decimal(r) > 0), reverse=True
    )
    return {
        "document": document,
        "is_invoice": isinstance(document, Invoice),
        "organisation": organisation,
        "customer": document.customer,
        "address": document.customer.primary_address,
        "lines": document.line_items(),
        "totals": totals,
        "iva_lines": iva_lines,
        "in_words": amount_in_words(totals["total"], lang),
        "lang": lang,
    }


def render_document_pdf(document: Quote | Invoice, lang: str) -> bytes:
    """The PDF bytes of one quote or invoice, written in `lang` ("es" or "en")."""
    from weasyprint import HTML  # noqa: PLC0415 - heavy import, only when a PDF is asked for

    with translation.override("es-ar" if lang == "es" else lang):
        html = render_to_string("business/document_pdf.html", _context(document, lang))
    pdf: bytes = HTML(string=html).write_pdf()
    return pdf


def document_filename(document: Quote | Invoice) -> str:
    if isinstance(document, Invoice):
        return f"factura-{document.letter}-{document.number}.pdf"
    return f"presupuesto-{document.number}.pdf"
