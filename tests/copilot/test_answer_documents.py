"""A quote's or invoice's PDF in an answer is a link to it (issue 28, point 4): named in the
reader's language from the turn's records, built from the one same-site shape the financial
agent writes — and nothing else in the text turns into a link."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.translation import override

from copilot.answers import render_answer
from copilot.models import Message
from copilot.services import conversation_create
from tests.conftest import Cast
from tests.panel_i18n import spanish_catalogue  # noqa: F401 - the fixture

pytestmark = pytest.mark.usefixtures("spanish_catalogue")

INVOICE = {"kind": "invoice", "id": 134, "label": "B 0001-00000072"}
QUOTE = {"kind": "quote", "id": 27, "label": "P-000027"}


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []  # (href, text)
        self._href: str | None = None
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag == "a":
            self._href = dict(attrs).get("href") or ""
            self.links.append((self._href, ""))

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            href, text = self.links[-1]
            self.links[-1] = (href, text + data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self._href = None


def _links(html: str) -> _Links:
    parser = _Links()
    parser.feed(html)
    return parser


@pytest.mark.parametrize(
    ("language", "invoice", "quote"),
    [
        ("es-ar", "Factura B 0001-00000072 (PDF)", "Presupuesto P-000027 (PDF)"),
        ("en", "Invoice B 0001-00000072 (PDF)", "Quote P-000027 (PDF)"),
    ],
)
def test_a_pdf_line_is_a_link_named_in_the_readers_language(
    language: str, invoice: str, quote: str
) -> None:
    text = (
        "Listo, emití la factura.\nPDF: /invoices/134/pdf/\n\n"
        "Y el presupuesto.\nPDF: /quotes/27/pdf/"
    )
    assert "<a" not in render_answer("Listo, emití la factura.")  # before: no link at all
    with override(language):
        html = render_answer(text, [INVOICE, QUOTE])
    assert _links(html).links == [("/invoices/134/pdf/", invoice), ("/quotes/27/pdf/", quote)]
    assert "PDF: /" not in html  # the path is not shown as text any more
    assert 'target="_blank"' in html and 'rel="noopener"' in html


def test_a_document_the_records_do_not_name_is_linked_by_its_number_and_keeps_its_lang() -> None:
    with override("es-ar"):
        html = render_answer("PDF: /quotes/9/pdf/?lang=en")
    assert _links(html).links == [("/quotes/9/pdf/?lang=en", "Presupuesto #9 (PDF)")]


@pytest.mark.parametrize(
    "text",
    [
        'PDF: /quotes/1/pdf/"><script>alert(1)</script>',
        "PDF: javascript:alert(1)//quotes/1/pdf/",
        "PDF: //evil.example/quotes/1/pdf/",
        "PDF: https://evil.example/quotes/1/pdf/",
        "PDF: /quotes/1/pdf/?lang=es&next=javascript:alert(1)",
        "PDF: /customers/1/pdf/",
        "mirá /quotes/1/pdf/ acá",  # not a line of its own
        "`PDF: /quotes/1/pdf/` PDF: /quotes/2/pdf/",
    ],
)
def test_a_look_alike_path_is_never_linked_and_its_markup_stays_text(text: str) -> None:
    html = render_answer(text, [QUOTE])
    found = _links(html)
    assert found.links == []
    assert "script" not in found.tags and "<script" not in html


def test_a_reply_carries_its_pdf_link_on_the_page_and_in_the_live_fragment(
    client: Client, cast: Cast
) -> None:
    conversation = conversation_create(organisation=cast.org, user=cast.operator, channel="panel")
    did = {"agents": [], "records": [INVOICE], "urgency": ""}
    Message.objects.create(
        organisation=cast.org, conversation=conversation, role="assistant",
        text="Te paso la factura.\nPDF: /invoices/134/pdf/", trace={"turn_id": "t-1", "did": did},
    )  # fmt: skip
    client.force_login(cast.operator)
    for language, label in (("es-ar", "Factura B 0001-00000072 (PDF)"),
                            ("en", "Invoice B 0001-00000072 (PDF)")):  # fmt: skip
        ui = {"HTTP_ACCEPT_LANGUAGE": language}
        page = client.get(reverse("chat_detail", args=[conversation.pk]), **ui).content.decode()
        live = client.get(reverse("chat_answer", args=[conversation.pk, "t-1"]), **ui)
        for html in (page, live.content.decode()):
            assert ("/invoices/134/pdf/", label) in _links(html).links


def test_whatsapp_still_reads_the_stored_line_as_the_document_to_send() -> None:
    from whatsapp.customers import for_customer  # noqa: PLC0415 - the channel's own reading

    text, documents, _hidden = for_customer("Acá está.\nPDF: /invoices/134/pdf/", None, "es")
    assert text == "Acá está." and [(d.kind, d.id) for d in documents] == [("invoice", 134)]
