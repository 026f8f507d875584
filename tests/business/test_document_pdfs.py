"""Quote and invoice PDFs (E5): rendered from the template, read back as text from the bytes."""

from __future__ import annotations

import io
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from pypdf import PdfReader

from business import services
from business.documents import amount_in_words, document_language
from business.models import Invoice, Organisation, Quote
from business.services import LineInput
from tests import factories

COMPANY_CUIT = "30-71234567-1"
ORG_CUIT = "30-71584963-8"


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _pdf_text(content: bytes) -> str:
    reader = PdfReader(io.BytesIO(content))
    return " ".join(" ".join(page.extract_text().split()) for page in reader.pages)


@pytest.fixture
def documents(org: Organisation) -> tuple[Quote, Invoice]:
    Organisation.objects.filter(pk=org.pk).update(cuit=ORG_CUIT, address="Av. Mitre 100")
    org.refresh_from_db()
    company = factories.make_customer(org, "Frío SA", kind="company", cuit=COMPANY_CUIT)
    lines = [LineInput("Instalación split", 1, 50000, "21"), LineInput("Caño", 2, 20000, "10.5")]
    quote = services.quote_create(organisation=org, customer=company, lines=lines)
    invoice = services.invoice_create(organisation=org, quote=quote)
    return quote, invoice


def test_amount_in_words_in_spanish_and_english() -> None:
    assert amount_in_words(Decimal("102850.00"), "es") == (
        "pesos ciento dos mil ochocientos cincuenta con 00/100"
    )
    assert amount_in_words(Decimal("1021.5"), "es") == "pesos mil veintiuno con 50/100"
    assert amount_in_words(Decimal("102850.00"), "en") == (
        "one hundred two thousand eight hundred fifty pesos and 00/100"
    )


def test_the_language_is_the_query_then_the_request() -> None:
    assert document_language("en", "es-ar") == "en"
    assert document_language(None, "es-ar") == "es"
    assert document_language("fr", "en") == "en"


def test_an_invoice_pdf_carries_numbers_parties_iva_and_the_mark(cast, documents) -> None:
    _quote, invoice = documents
    response = _client(cast.operator).get(f"/invoices/{invoice.pk}/pdf/")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/pdf"
    assert 'filename="factura-A-0001-00000001.pdf"' in response["Content-Disposition"]
    text = _pdf_text(response.content)
    assert "Nº 0001-00000001" in text
    assert "Clima Sur" in text and ORG_CUIT in text and COMPANY_CUIT in text
    assert "Frío SA" in text and "IVA Responsable Inscripto" in text
    assert "IVA 21% $ 10.500,00" in text and "IVA 10,5% $ 4.200,00" in text
    assert "$ 104.700,00" in text
    assert "pesos ciento cuatro mil setecientos con 00/100" in text
    assert "DOCUMENTO NO VÁLIDO COMO FACTURA" in text


def test_the_english_pdf_says_it_is_not_a_fiscal_voucher(cast, documents) -> None:
    _quote, invoice = documents
    response = _client(cast.operator).get(f"/invoices/{invoice.pk}/pdf/?lang=en")
    text = _pdf_text(response.content)
    assert "INVOICE" in text and "NOT A FISCAL VOUCHER" in text
    assert "one hundred four thousand seven hundred pesos and 00/100" in text
    assert "IVA 10.5% $ 4.200,00" in text


def test_a_quote_pdf_shows_its_number_and_validity(cast, documents) -> None:
    quote, _invoice = documents
    response = _client(cast.manager).get(f"/quotes/{quote.pk}/pdf/?lang=en")
    assert response.status_code == 200
    text = _pdf_text(response.content)
    assert "Nº P-000001" in text and "$ 104.700,00" in text
    assert f"valid until {quote.valid_until:%d/%m/%Y}" in text


@pytest.mark.parametrize("kind", ["quotes", "invoices"])
def test_an_outsider_gets_404(cast, documents, kind: str) -> None:
    quote, invoice = documents
    pk = quote.pk if kind == "quotes" else invoice.pk
    assert _client(cast.outsider).get(f"/{kind}/{pk}/pdf/").status_code == 404
    assert Client().get(f"/{kind}/{pk}/pdf/").status_code == 302  # anonymous: to the login


def test_the_detail_pages_link_their_pdf(cast, documents) -> None:
    quote, invoice = documents
    client = _client(cast.operator)
    assert f'href="/quotes/{quote.pk}/pdf/"' in client.get(f"/quotes/{quote.pk}/").content.decode()
    page = client.get(f"/invoices/{invoice.pk}/").content.decode()
    assert f'href="/invoices/{invoice.pk}/pdf/"' in page


def test_a_documents_lines_come_in_the_order_they_were_written(documents) -> None:
    """Read without a prefetch (the WhatsApp outbox renders a PDF from a plain row), the lines
    are still ordered: a database owes no order to a query without ORDER BY."""
    quote = Quote.objects.get(pk=documents[0].pk)
    with CaptureQueriesContext(connection) as seen:
        lines = quote.line_items()
    assert [line.pk for line in lines] == sorted(line.pk for line in lines)
    assert [line.description for line in lines] == ["Instalación split", "Caño"]
    assert "ORDER BY" in seen.captured_queries[-1]["sql"]
