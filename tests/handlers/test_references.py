"""Quotes, invoices and tickets named by their number: the handlers look the record up in the
organisation, act on exactly that one, and say plainly when the number does not exist — a
number of another organisation reads the same as a missing one."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from agents.escalation.agent import complaint, escalate
from agents.financial.agent import generate_invoice, generate_quote, payment_status
from approvals.models import PendingAction
from business import services
from business.models import EscalationTicket, Invoice, Quote
from tests import factories
from tests.conftest import Cast
from tests.handlers.conftest import Desk, Shop, Turn, assert_no_foreign_data
from tests.handlers.office import Office

pytestmark = pytest.mark.django_db


def _quote(shop: Shop, number: str = "P-000027", **kwargs: Any) -> Quote:
    quote = services.quote_create(
        organisation=shop.juan.organisation,
        customer=kwargs.pop("customer", shop.juan),
        lines=[services.LineInput(price_item=shop.split)],
    )
    Quote.objects.filter(pk=quote.pk).update(number=number, **kwargs)
    quote.refresh_from_db()
    return quote


def _financial(desk: Desk, handler: Any, intent: str, **kwargs: Any) -> Turn:
    return desk.run(handler, intent, "financial", **kwargs)


# --- quotes -----------------------------------------------------------------------------------


def test_a_quote_named_by_number_is_shown_and_not_sent(desk: Desk, shop: Shop) -> None:
    quote = _quote(shop, status="sent")
    turn = _financial(
        desk, generate_quote, "generate_quote",
        text="mandale el presupuesto P-000027 al cliente", quote_number="P-000027",
    )  # fmt: skip
    assert turn.outcome.success, turn.outcome.error
    assert turn.text.startswith("El presupuesto P-000027 de Juan Pérez (enviado, del ")
    assert "total $ 181.500,00" in turn.text
    assert "No envío presupuestos desde acá" in turn.text
    assert turn.text.endswith(f"\nPDF: /quotes/{quote.pk}/pdf/")
    assert Quote.objects.count() == 1  # nothing new was quoted
    assert [(m.kind, m.id) for m in turn.outcome.mutations] == [
        ("quote", quote.pk), ("customer", shop.juan.pk),
    ]  # fmt: skip


def test_a_quote_number_that_does_not_exist_is_said_so(desk: Desk, shop: Shop) -> None:
    _quote(shop, number="P-000026")
    turn = _financial(desk, generate_quote, "generate_quote", quote_number="P-000027")
    assert not turn.outcome.success
    assert turn.text == "No encontré el presupuesto P-000027."
    assert Quote.objects.count() == 1


def test_another_organisations_quote_number_is_not_found(
    desk: Desk, shop: Shop, cast: Cast
) -> None:
    foreign = services.quote_create(
        organisation=cast.other_org,
        customer=shop.foreign_customer,
        lines=[services.LineInput(description="Service ajeno", unit_price=Decimal("999999"))],
    )
    turn = _financial(
        desk, generate_invoice, "generate_invoice",
        text=f"facturá el presupuesto {foreign.number}", quote_number=foreign.number,
    )  # fmt: skip
    assert turn.text == f"No encontré el presupuesto {foreign.number}."
    assert not PendingAction.objects.exists()
    assert not Invoice.objects.filter(organisation=cast.org).exists()
    assert_no_foreign_data(turn.text)


def test_invoicing_a_quote_by_number_invoices_exactly_that_quote(desk: Desk, shop: Shop) -> None:
    _quote(shop, number="P-000026", customer=shop.maria)
    quote = _quote(shop)
    turn = _financial(
        desk, generate_invoice, "generate_invoice",
        text="facturá el presupuesto P-000027", quote_number="P-000027",
    )  # fmt: skip
    action = PendingAction.objects.get()
    assert action.arguments == {"quote_id": quote.pk}
    assert "La factura del presupuesto P-000027 de Juan Pérez" in turn.text
    assert "total $ 181.500,00" in turn.text


def test_a_quote_verb_with_an_invoice_word_invoices_the_quote(desk: Desk, shop: Shop) -> None:
    quote = _quote(shop)
    _financial(
        desk, generate_quote, "generate_quote",
        text="facturá el presupuesto 27", quote_number="P-000027",
    )  # fmt: skip
    assert PendingAction.objects.get().arguments == {"quote_id": quote.pk}


def test_a_quote_already_invoiced_is_not_invoiced_again(desk: Desk, shop: Shop) -> None:
    quote = _quote(shop)  # no job: the invoice remembers its quote
    issued = services.invoice_create(organisation=shop.juan.organisation, quote=quote)
    turn = _financial(desk, generate_invoice, "generate_invoice", quote_number="P-000027")
    assert not turn.outcome.success
    assert f"El presupuesto P-000027 ya está facturado (factura {issued.letter}" in turn.text
    assert not PendingAction.objects.exists()


def test_a_rejected_quote_is_not_invoiced(desk: Desk, shop: Shop) -> None:
    _quote(shop, status="rejected")
    turn = _financial(desk, generate_invoice, "generate_invoice", quote_number="P-000027")
    assert not turn.outcome.success and "está rechazado: no lo facturo" in turn.text
    assert not PendingAction.objects.exists()


def test_a_quote_of_another_customer_than_the_one_named_is_left_alone(
    desk: Desk, shop: Shop
) -> None:
    _quote(shop, customer=shop.maria)
    turn = _financial(
        desk, generate_invoice, "generate_invoice", quote_number="P-000027", customer="Juan Pérez"
    )
    assert not turn.outcome.success
    assert "es de María González SRL, no de Juan Pérez: no hice nada con él" in turn.text
    assert not PendingAction.objects.exists()


# --- invoices ---------------------------------------------------------------------------------


def test_is_this_invoice_paid_by_its_printed_number(desk: Desk, shop: Shop, cast: Cast) -> None:
    invoice = factories.make_invoice(cast.org, shop.juan, number="0001-00000012")
    factories.make_payment(cast.org, invoice, "121000")
    turn = _financial(
        desk, payment_status, "payment_status",
        text="¿está paga la factura B 0001-00000012?",
        invoice_number="0001-00000012", invoice_letter="B",
    )  # fmt: skip
    assert turn.outcome.success, turn.outcome.error
    assert turn.text.startswith("La factura B 0001-00000012 de Juan Pérez está paga")


def test_an_invoice_number_routed_to_generate_invoice_answers_its_status(
    desk: Desk, shop: Shop, cast: Cast
) -> None:
    factories.make_invoice(cast.org, shop.juan, number="0001-00000012")
    turn = _financial(
        desk, generate_invoice, "generate_invoice",
        text="la factura 12 la pagaron?", invoice_number="0001-00000012",
    )  # fmt: skip
    assert "Juan Pérez: Factura B 0001-00000012" in turn.text
    assert not PendingAction.objects.exists()


def test_an_invoice_of_the_other_letter_is_not_it(desk: Desk, shop: Shop, cast: Cast) -> None:
    factories.make_invoice(cast.org, shop.juan, number="0001-00000012", letter="B")
    turn = _financial(
        desk, payment_status, "payment_status",
        invoice_number="0001-00000012", invoice_letter="A",
    )  # fmt: skip
    assert not turn.outcome.success
    assert turn.text == "No encontré la factura A 0001-00000012."


def test_another_organisations_invoice_number_is_not_found(
    desk: Desk, shop: Shop, cast: Cast
) -> None:
    foreign = Invoice.objects.get(organisation=cast.other_org)
    turn = _financial(
        desk, payment_status, "payment_status",
        text=f"¿está paga la factura {foreign.number}?", invoice_number=foreign.number,
    )  # fmt: skip
    assert not turn.outcome.success
    assert turn.text == f"No encontré la factura {foreign.number}."
    assert_no_foreign_data(turn.text)


def test_an_invoice_number_wins_over_the_customer_under_discussion(
    desk: Desk, shop: Shop, cast: Cast
) -> None:
    factories.make_invoice(cast.org, shop.maria, number="0001-00000012")
    turn = _financial(
        desk, payment_status, "payment_status", invoice_number="0001-00000012",
        state={"customer_id": shop.juan.pk, "customer_label": "Juan Pérez"},
    )  # fmt: skip
    assert turn.outcome.success, turn.outcome.error
    assert "María González SRL" in turn.text


# --- tickets ----------------------------------------------------------------------------------


def test_the_status_of_a_ticket_by_number(office_at_work: Office, shop: Shop, cast: Cast) -> None:
    ticket = services.ticket_create(
        organisation=cast.org, reason="complaint", summary="El split gotea", priority="high",
        customer=shop.juan,
    )  # fmt: skip
    turn = office_at_work.run(
        complaint, "complaint", "escalation", language="en",
        text=f"what's the status of ticket {ticket.pk}", ticket_id=ticket.pk,
    )  # fmt: skip
    assert turn.outcome.success, turn.outcome.error
    assert turn.text.startswith(
        f"Ticket #{ticket.pk} (complaint for Juan Pérez, high priority, of "
    )
    assert "is open, not picked up yet. It says: “El split gotea”." in turn.text
    assert EscalationTicket.objects.count() == 1  # no new ticket


def test_a_missing_ticket_number_opens_nothing(
    office_at_work: Office, shop: Shop, cast: Cast
) -> None:
    foreign = services.ticket_create(
        organisation=cast.other_org, reason="complaint", summary="ajeno", priority="high"
    )
    turn = office_at_work.run(
        escalate, "escalate", "escalation",
        text=f"el reclamo {foreign.pk} sigue sin resolverse", ticket_id=foreign.pk,
    )  # fmt: skip
    assert not turn.outcome.success
    assert turn.text.startswith(f"No encontré el ticket #{foreign.pk}. Revisá el número")
    assert not EscalationTicket.objects.filter(organisation=cast.org).exists()


def test_an_agent_without_the_lookup_tool_says_so_and_not_not_found(desk: Desk, shop: Shop) -> None:
    _quote(shop)
    row = desk.agents["financial"]
    row.tools = [name for name in row.tools if name != "quote_find"]
    row.save()
    turn = _financial(desk, generate_quote, "generate_quote", quote_number="P-000027")
    assert not turn.outcome.success
    assert turn.text.startswith(
        "No puedo buscar el presupuesto P-000027: la herramienta quote_find no está habilitada"
    )


def test_a_number_both_letters_use_is_asked_about_and_the_answer_picks_one(
    desk: Desk, shop: Shop, cast: Cast
) -> None:
    # Each letter numbers on its own: A 0001-00000007 and B 0001-00000007 are both normal.
    factories.make_invoice(cast.org, shop.juan, number="0001-00000007", letter="A")
    paid = factories.make_invoice(cast.org, shop.juan, number="0001-00000007", letter="B")
    factories.make_payment(cast.org, paid, str(paid.totals()["total"]))
    asked = _financial(
        desk, payment_status, "payment_status",
        text="¿está paga la factura 7?", invoice_number="0001-00000007",
    )  # fmt: skip
    assert not asked.outcome.success and asked.outcome.clarify is not None
    assert asked.text == "Hay más de una factura 0001-00000007: ¿la A o la B?"
    answered = _financial(
        desk, payment_status, "payment_status",
        text="¿está paga la factura 7? la B", invoice_number="0001-00000007",
    )  # fmt: skip
    assert answered.outcome.success, answered.outcome.error
    assert answered.text.startswith("La factura B 0001-00000007 de Juan Pérez está paga")


def test_a_number_alone_is_found_at_the_organisations_own_point_of_sale(
    desk: Desk, shop: Shop, cast: Cast
) -> None:
    cast.org.point_of_sale = 3
    cast.org.save(update_fields=["point_of_sale"])
    factories.make_invoice(cast.org, shop.juan, number="0003-00000005", point_of_sale=3)
    turn = _financial(
        desk, payment_status, "payment_status",
        text="¿está paga la factura 5?", invoice_number="0001-00000005",  # the reader's default
    )  # fmt: skip
    assert "Factura B 0003-00000005" in turn.text or "factura B 0003-00000005" in turn.text
