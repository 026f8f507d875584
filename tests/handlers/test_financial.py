"""The financial agent's handlers: quotes, invoices held for approval, and what is owed."""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

import pytest

from agents.base import Mutation
from agents.financial.agent import generate_invoice, generate_quote, payment_status
from agents.models import Agent
from approvals.models import PendingAction
from business.models import Invoice, Quote
from tests import factories
from tests.handlers.conftest import (
    MONDAY,
    TUESDAY,
    Desk,
    Shop,
    Turn,
    assert_no_foreign_data,
    at,
)

pytestmark = pytest.mark.django_db


def _quote(desk: Desk, **kwargs: Any) -> Turn:
    return desk.run(generate_quote, "generate_quote", "financial", **kwargs)


def _invoice(desk: Desk, **kwargs: Any) -> Turn:
    return desk.run(generate_invoice, "generate_invoice", "financial", **kwargs)


# --- generate_quote -------------------------------------------------------------------------


def test_quote_prices_the_service_from_the_list(desk: Desk, shop: Shop) -> None:
    turn = _quote(desk, customer="Juan Pérez", service="instalación de split",
                  text="presupuesto de instalación de split para Juan Pérez")  # fmt: skip
    quote = Quote.objects.get(customer=shop.juan)
    assert turn.outcome.success, turn.outcome.error
    assert quote.totals()["total"] == Decimal("181500.00")
    assert f"armé el presupuesto {quote.number} para Juan Pérez" in turn.text
    assert "Instalación de split hasta 3000 frigorías: 1 × $ 150.000,00 (IVA 21%)" in turn.text
    assert "Total: neto $ 150.000,00 + IVA 21% $ 31.500,00 = total $ 181.500,00." in turn.text
    kinds = [(m.kind, m.id) for m in turn.outcome.mutations]
    assert kinds == [("quote", quote.pk), ("customer", shop.juan.pk)]
    assert_no_foreign_data(turn.text)


def test_quote_of_two_services_has_a_line_each(desk: Desk, shop: Shop) -> None:
    turn = _quote(desk, customer="Juan Pérez", service="instalación de split y carga de gas")
    quote = Quote.objects.get(customer=shop.juan)
    assert quote.lines.count() == 2
    assert (
        "Total: neto $ 210.000,00 + IVA 21% $ 31.500,00 + IVA 10,5% $ 6.300,00 = total "
        "$ 247.800,00." in turn.text
    )


def test_quote_with_an_explicit_net_amount_in_english(desk: Desk, shop: Shop) -> None:
    turn = _quote(desk, customer="María González SRL", amount=Decimal("640000"),
                  service="mantenimiento anual", language="en",
                  text="quote 640.000 plus IVA for the annual maintenance")  # fmt: skip
    quote = Quote.objects.get(customer=shop.maria)
    assert quote.totals()["net"] == Decimal("640000.00")
    assert "net $640,000.00 + IVA 21% $134,400.00 = total $774,400.00" in turn.text


def test_quote_with_iva_included_takes_the_iva_out(desk: Desk, shop: Shop) -> None:
    _quote(desk, customer="Juan Pérez", amount=Decimal("121000"), service="reparación",
           text="presupuesto de reparación por 121.000 con IVA incluido")  # fmt: skip
    assert Quote.objects.get(customer=shop.juan).totals()["net"] == Decimal("100000.00")


def test_quote_at_the_reduced_rate_uses_ten_and_a_half(desk: Desk, shop: Shop) -> None:
    turn = _quote(desk, customer="Juan Pérez", service="carga de gas",
                  text="presupuesto de carga de gas")  # fmt: skip
    assert "IVA 10,5% $ 6.300,00 = total $ 66.300,00" in turn.text


def test_quote_for_a_service_not_in_the_list_asks_for_an_amount(desk: Desk, shop: Shop) -> None:
    turn = _quote(desk, customer="Juan Pérez", service="pintura de fachada")
    assert not turn.outcome.success
    assert not Quote.objects.exists()
    assert "No encontré «pintura de fachada» en la lista de precios" in turn.text
    assert "- Carga de gas refrigerante: $ 60.000,00" in turn.text
    assert turn.tools == ["quote_create", "price_list"]
    assert_no_foreign_data(turn.text)


def test_quote_for_an_unknown_customer_makes_nothing(desk: Desk, shop: Shop) -> None:
    turn = _quote(desk, customer="Roberto Nadie", service="instalación de split")
    assert not turn.outcome.success and "No encontré ningún cliente «Roberto Nadie»" in turn.text
    assert not Quote.objects.exists()


def test_quote_without_service_or_amount_asks_what(desk: Desk, shop: Shop) -> None:
    turn = _quote(desk, customer="Juan Pérez", text="haceme un presupuesto para Juan Pérez")
    assert turn.outcome.error == "missing service"
    assert "quote_create" not in turn.tools and not Quote.objects.exists()


def test_quote_reads_the_service_from_the_message_when_none_was_extracted(
    desk: Desk, shop: Shop
) -> None:
    turn = _quote(desk, customer="Juan Pérez", text="Haceme un presupuesto para Juan Pérez por la "
                  "instalación de un split de 3000 frigorías")  # fmt: skip
    assert turn.outcome.success, turn.outcome.error
    quote = Quote.objects.get(customer=shop.juan)
    assert [line.description for line in quote.lines.all()] == [
        "Instalación de split hasta 3000 frigorías"
    ]
    assert_no_foreign_data(turn.text)


def test_quote_asks_when_the_message_words_fit_no_listed_service(desk: Desk, shop: Shop) -> None:
    turn = _quote(desk, customer="Juan Pérez", text="presupuesto de pintura de la fachada")
    assert turn.outcome.error == "missing service" and not Quote.objects.exists()


# --- generate_invoice -----------------------------------------------------------------------


def test_invoice_of_the_job_booked_earlier_is_held_with_its_totals(desk: Desk, shop: Shop) -> None:
    job = factories.make_job(shop.juan.organisation, shop.juan, at(TUESDAY, 10),
                             service="Instalación de split", technician=shop.carlos)  # fmt: skip
    booked = Mutation(kind="job", id=job.pk, label=f"#{job.pk}",
                      data={"customer_id": shop.juan.pk, "customer": "Juan Pérez"})  # fmt: skip
    turn = _invoice(desk, earlier=[booked], text="y facturalo")
    action = PendingAction.objects.get(organisation=shop.juan.organisation)
    assert not Invoice.objects.filter(organisation=shop.juan.organisation).exists()
    assert (action.tool, action.arguments["job_id"]) == ("invoice_create", job.pk)
    assert action.arguments["items"] == [shop.split.code]
    assert turn.outcome.success and turn.outcome.pending_approvals == [action.pk]
    assert turn.text.startswith(
        f"La factura de Juan Pérez por el trabajo #{job.pk} (Instalación de split, martes 24/11 "
        f"10:00) quedó pendiente de aprobación de un gerente (pedido #{action.pk});"
    )
    assert "Importes: neto $ 150.000,00 + IVA 21% $ 31.500,00 = total $ 181.500,00." in turn.text
    assert turn.tools == ["jobs_find", "price_list", "invoice_create"]
    assert_no_foreign_data(turn.text)


def test_invoice_for_a_customer_takes_their_latest_finished_job(desk: Desk, shop: Shop) -> None:
    org = shop.juan.organisation
    factories.make_job(org, shop.juan, at(MONDAY - datetime.timedelta(days=7), 9), status="done",
                       service="Carga de gas")  # fmt: skip
    latest = factories.make_job(org, shop.juan, at(MONDAY - datetime.timedelta(days=1), 9),
                                status="done", service="Carga de gas")  # fmt: skip
    turn = _invoice(desk, customer="Juan Pérez", language="en")
    action = PendingAction.objects.get(organisation=org)
    assert action.arguments["job_id"] == latest.pk
    assert "net $60,000.00 + IVA 10.5% $6,300.00 = total $66,300.00" in turn.text
    assert "is waiting for a manager's approval" in turn.text


def test_invoice_with_an_explicit_amount_uses_it(desk: Desk, shop: Shop) -> None:
    job = factories.make_job(shop.juan.organisation, shop.juan, at(MONDAY, 8), status="done",
                             service="Reparación de pérdida")  # fmt: skip
    turn = _invoice(desk, state={"job_id": job.pk}, amount=Decimal("15000"),
                    text="facturale 15 lucas más IVA")  # fmt: skip
    action = PendingAction.objects.get()
    assert (action.arguments["amount"], action.arguments["services"]) == (
        "15000",
        ["Reparación de pérdida"],
    )
    assert "neto $ 15.000,00 + IVA 21% $ 3.150,00 = total $ 18.150,00" in turn.text


def test_invoice_of_a_quote_made_earlier_in_the_turn(desk: Desk, shop: Shop) -> None:
    quote_turn = _quote(desk, customer="Juan Pérez", service="instalación de split")
    turn = _invoice(desk, earlier=quote_turn.outcome.mutations)
    action = PendingAction.objects.get()
    quote = Quote.objects.get()
    assert action.arguments == {"quote_id": quote.pk}
    assert f"La factura del presupuesto {quote.number} de Juan Pérez" in turn.text
    assert "total $ 181.500,00" in turn.text


def test_invoice_of_a_cancelled_job_is_refused(desk: Desk, shop: Shop) -> None:
    job = factories.make_job(shop.juan.organisation, shop.juan, at(MONDAY, 8), status="cancelled")
    turn = _invoice(desk, state={"job_id": job.pk})
    assert not turn.outcome.success and "está cancelado: no lo facturo" in turn.text
    assert not PendingAction.objects.exists()


def test_invoice_without_a_finished_job_says_so(desk: Desk, shop: Shop) -> None:
    turn = _invoice(desk, customer="Juan Pérez")
    assert turn.outcome.error == "no done job"
    assert "No encontré trabajos terminados de Juan Pérez para facturar." in turn.text
    assert not PendingAction.objects.exists()


def test_invoice_without_jobs_find_fails_clearly(desk: Desk, shop: Shop) -> None:
    Agent.objects.filter(pk=desk.agents["financial"].pk).update(
        tools=["price_list", "payment_status", "quote_create", "invoice_create"]
    )
    desk.agents["financial"].refresh_from_db()
    turn = _invoice(desk, customer="Juan Pérez")
    assert not turn.outcome.success
    assert turn.outcome.error == "tool jobs_find not enabled"
    assert not PendingAction.objects.exists()


# --- payment_status -------------------------------------------------------------------------


def test_payment_status_lists_what_the_customer_owes_since_when(desk: Desk, shop: Shop) -> None:
    org = shop.juan.organisation
    old = factories.make_invoice(org, shop.juan, Decimal("100000"),
                                 issued_on=datetime.date(2026, 10, 1),
                                 due_on=datetime.date(2026, 10, 16))  # fmt: skip
    factories.make_payment(org, old, "21000")
    factories.make_invoice(org, shop.juan, Decimal("50000"), issued_on=datetime.date(2026, 11, 2))
    paid = factories.make_invoice(org, shop.juan, Decimal("10000"))
    factories.make_payment(org, paid, "12100")
    turn = desk.run(payment_status, "payment_status", "financial", customer="Juan Pérez")
    assert turn.outcome.success
    assert turn.text.startswith(
        "Juan Pérez debe $ 160.500,00 en 2 facturas, desde el 01/10/2026:\n"
    )
    assert (
        f"Factura B {old.number} del 01/10/2026: saldo $ 100.000,00 de $ 121.000,00, pagó "
        "$ 21.000,00, vencida hace 38 días\n" in turn.text
    )
    assert paid.number not in turn.text
    assert turn.outcome.mutations[0].id == shop.juan.pk
    assert_no_foreign_data(turn.text)


def test_payment_status_of_a_paid_up_customer(desk: Desk, shop: Shop) -> None:
    turn = desk.run(payment_status, "payment_status", "financial", customer="María González SRL",
                    language="en")  # fmt: skip
    assert turn.text == "María González SRL is paid up: no unpaid invoices."


def test_payment_status_of_one_invoice_by_number(desk: Desk, shop: Shop) -> None:
    invoice = factories.make_invoice(shop.juan.organisation, shop.juan, Decimal("10000"))
    factories.make_payment(shop.juan.organisation, invoice, "12100")
    turn = desk.run(payment_status, "payment_status", "financial",
                    text=f"¿la {invoice.number} está paga?")  # fmt: skip
    assert turn.text == (
        f"La factura B {invoice.number} de Juan Pérez está paga ($ 12.100,00).\n"
        f"PDF: /invoices/{invoice.pk}/pdf/"
    )


def test_the_latest_invoice_is_shown_with_its_pdf_paid_or_not(desk: Desk, shop: Shop) -> None:
    org = shop.juan.organisation
    factories.make_invoice(org, shop.juan, Decimal("50000"), issued_on=datetime.date(2026, 10, 1))
    newest = factories.make_invoice(
        org, shop.juan, Decimal("10000"), issued_on=datetime.date(2026, 11, 2)
    )
    factories.make_payment(org, newest, "12100")
    factories.make_invoice(org, shop.maria, Decimal("9000"), issued_on=datetime.date(2026, 11, 9))
    text = "mandame la factura de Juan Pérez, la última"
    turn = desk.run(payment_status, "payment_status", "financial", text=text, customer="Juan Pérez")
    assert turn.outcome.success
    assert turn.text == (
        f"La factura B {newest.number} de Juan Pérez está paga ($ 12.100,00).\n"
        f"PDF: /invoices/{newest.pk}/pdf/"
    )
    # Without pointing at one, the same customer's answer is the debt.
    debt = desk.run(payment_status, "payment_status", "financial", customer="Juan Pérez")
    assert debt.text.startswith("Juan Pérez debe $ 60.500,00 en 1 factura")


def test_the_latest_invoice_of_a_customer_without_invoices_says_so(desk: Desk, shop: Shop) -> None:
    text = "pasame la última factura de María González SRL"
    turn = desk.run(payment_status, "payment_status", "financial", text=text,
                    customer="María González SRL")  # fmt: skip
    assert not turn.outcome.success
    assert turn.text == "No encontré facturas de María González SRL."


def test_payment_status_of_the_company_ranks_debtors(desk: Desk, shop: Shop) -> None:
    org = shop.juan.organisation
    factories.make_invoice(org, shop.juan, Decimal("100000"), issued_on=datetime.date(2026, 10, 1))
    factories.make_invoice(org, shop.maria, Decimal("200000"), issued_on=datetime.date(2026, 11, 1))
    turn = desk.run(payment_status, "payment_status", "financial", text="¿quién nos debe?")
    assert turn.text == (
        "Te deben $ 363.000,00 en 2 facturas de 2 clientes:\n"
        "- María González SRL: $ 242.000,00 (desde el 01/11/2026)\n"
        "- Juan Pérez: $ 121.000,00 (desde el 01/10/2026)"
    )


def test_payment_status_for_an_unknown_customer_says_so(desk: Desk, shop: Shop) -> None:
    turn = desk.run(payment_status, "payment_status", "financial", customer="Roberto Nadie")
    assert not turn.outcome.success and "No encontré ningún cliente «Roberto Nadie»" in turn.text


def test_another_organisations_job_reads_like_a_missing_one(desk: Desk, shop: Shop) -> None:
    turn = _invoice(desk, state={"job_id": shop.foreign_job.pk})
    assert not turn.outcome.success
    assert turn.text == f"No encontré el trabajo #{shop.foreign_job.pk}."
    assert not PendingAction.objects.exists()
    assert_no_foreign_data(turn.text)


# --- a job named by its day (issue 17: "el trabajo de hoy" invoiced Friday's job) -----------


def test_invoice_of_the_job_of_a_day_takes_that_days_job(desk: Desk, shop: Shop) -> None:
    org = shop.juan.organisation
    factories.make_job(org, shop.juan, at(MONDAY - datetime.timedelta(days=3), 9), status="done",
                       service="Carga de gas")  # fmt: skip
    today = factories.make_job(org, shop.juan, at(MONDAY, 9), service="Carga de gas",
                               technician=shop.carlos)  # fmt: skip
    turn = _invoice(desk, customer="Juan Pérez", customer_matched=True, date=MONDAY,
                    text="facturale a Juan Pérez el trabajo de hoy")  # fmt: skip
    action = PendingAction.objects.get(organisation=org)
    assert action.arguments["job_id"] == today.pk
    assert f"por el trabajo #{today.pk} (Carga de gas, lunes 23/11 09:00)" in turn.text


def test_invoice_of_a_day_without_jobs_says_so_and_invoices_nothing(desk: Desk, shop: Shop) -> None:
    org = shop.juan.organisation
    factories.make_job(org, shop.juan, at(MONDAY - datetime.timedelta(days=3), 9), status="done",
                       service="Carga de gas")  # fmt: skip
    turn = _invoice(desk, customer="Juan Pérez", customer_matched=True, date=MONDAY,
                    text="facturale a Juan Pérez el trabajo de hoy")  # fmt: skip
    assert not turn.outcome.success
    assert turn.text == "No encontré trabajos de Juan Pérez el lunes 23/11: no facturé nada."
    assert not PendingAction.objects.filter(organisation=org).exists()
    assert not Invoice.objects.filter(organisation=org).exists()


def test_invoice_of_another_organisations_job_number_finds_nothing(desk: Desk, shop: Shop) -> None:
    foreign = shop.foreign_job
    turn = _invoice(desk, job_id=foreign.pk, text=f"facturá el trabajo #{foreign.pk}")
    assert turn.text == f"No encontré el trabajo #{foreign.pk}."
    assert not PendingAction.objects.exists() and not Invoice.objects.filter(job=foreign).exists()
    assert_no_foreign_data(turn.text)
