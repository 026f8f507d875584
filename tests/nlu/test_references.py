"""Quote, invoice and ticket numbers as the product prints them and as people type them; and
what is not one (amounts, phones, CUITs, dates, job numbers)."""

from __future__ import annotations

import pytest

from nlu import Context, Router
from nlu.entities import extract_entities
from nlu.references import find_references


@pytest.mark.parametrize(
    "text",
    [
        "mandale el presupuesto P-000027 al cliente",
        "el presupuesto P-27",
        "presupuesto 27",
        "quote 27 for Gómez",
        "cotización nro 27",
        "la cotización n° 27",
        "quote no. 27",
        "P-000027",
    ],
)
def test_quote_numbers(text: str, ctx: Context) -> None:
    entities = extract_entities(text, ctx)
    assert entities.quote_number == "P-000027"
    assert entities.amount is None and entities.job_id is None


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("¿está paga la factura B 0001-00000012?", "B"),
        ("Factura B 0001-00000012", "B"),
        ("la factura 12", None),
        ("invoice #12", None),
        ("factura A 0001-12", "A"),
        ("factura C 0001-00000012", "C"),
        ("la C 0001-00000012 está paga?", "C"),
        ("0001-00000012 está paga?", None),
        ("invoice 0001-00000012 paid?", None),
        ("factura nro 12 de Gómez", None),
    ],
)
def test_invoice_numbers(text: str, letter: str | None, ctx: Context) -> None:
    entities = extract_entities(text, ctx)
    assert (entities.invoice_number, entities.invoice_letter) == ("0001-00000012", letter)
    assert entities.amount is None and entities.date is None


@pytest.mark.parametrize(
    "text", ["ticket #12", "el reclamo 12 sigue abierto", "what's the status of ticket 12"]
)
def test_ticket_numbers(text: str, ctx: Context) -> None:
    entities = extract_entities(text, ctx)
    assert entities.ticket_id == 12
    assert entities.job_id is None  # "#12" after "ticket" is no job


@pytest.mark.parametrize(
    "text",
    [
        "presupuesto 15000 para Gómez",
        "hacé un presupuesto de 15 lucas",
        "presupuesto 150 mil más iva",
        "facturá 12 lucas a Gómez",
        "facturá 15000",
        "llamalo al 4555-1234",
        "CUIT 20-12345678-9",
        "el reclamo 10 de marzo",
        "el trabajo 362",
        "factura del trabajo #362",
        "a las 10",
        "tengo un reclamo de Gómez",
    ],
)
def test_what_is_not_a_reference(text: str) -> None:
    assert find_references(text) == []


def test_an_amount_next_to_a_reference_is_still_the_amount(ctx: Context) -> None:
    entities = extract_entities("facturale 15 lucas del presupuesto P-000027", ctx)
    assert entities.quote_number == "P-000027"
    assert str(entities.amount) == "15000"


def test_two_different_numbers_of_a_kind_name_neither(ctx: Context) -> None:
    entities = extract_entities("el presupuesto 27 o el presupuesto 28", ctx)
    assert entities.quote_number is None


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("¿está paga la factura B 0001-00000012?", "payment_status"),
        ("facturá el presupuesto P-000027", "generate_invoice"),
        ("what's the status of ticket 12", "complaint"),
        ("mandale el presupuesto P-000027 al cliente", "generate_quote"),
    ],
)
def test_the_router_keeps_the_reading_a_reference_makes_plain(
    router: Router, ctx: Context, text: str, intent: str
) -> None:
    assert router.understand(text, ctx).intents == [intent]
