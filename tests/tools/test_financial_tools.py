"""Financial tools on real rows: the price list, what is owed, quotes and invoices."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest

from agents.context import TurnContext
from business.models import Invoice, Quote
from tests import factories
from tests.tools.conftest import MONDAY, Shop, at, run

pytestmark = pytest.mark.django_db


def test_price_list_lists_everything_or_what_matches(ctx: TurnContext, shop: Shop) -> None:
    everything = run(ctx, "price_list")
    assert everything.ok
    assert {i["code"] for i in everything.data["items"]} == {shop.split.code, shop.gas.code}
    matched = run(ctx, "price_list", query="instalar un split")
    assert [i["id"] for i in matched.data["items"]] == [shop.split.pk]
    assert matched.data["items"][0]["unit_price"] == "150000.00"
    assert run(ctx, "price_list", query="recarga de gas").data["items"][0]["iva_rate"] == "10.5"
    assert run(ctx, "price_list", category="heating").data["items"] == []


def test_payment_status_lists_what_is_owed_since_when(ctx: TurnContext, shop: Shop) -> None:
    org = ctx.organisation
    old = factories.make_invoice(
        org,
        shop.juan,
        Decimal("10000"),
        issued_on=datetime.date(2026, 10, 1),
        due_on=datetime.date(2026, 10, 16),
    )
    factories.make_payment(org, old, "2100")
    factories.make_invoice(org, shop.maria, Decimal("1000"), issued_on=datetime.date(2026, 11, 20))
    paid = factories.make_invoice(org, shop.juan, Decimal("500"))
    factories.make_payment(org, paid, "605")
    everyone = run(ctx, "payment_status")
    assert everyone.ok
    assert [i["number"] for i in everyone.data["invoices"]] == [
        old.number,
        Invoice.objects.get(customer=shop.maria).number,
    ]
    assert everyone.data["total_owed"] == "11210.00"  # 12100 - 2100 + 1210
    assert everyone.data["oldest_since"] == "2026-10-01"
    first = everyone.data["invoices"][0]
    assert first["balance"] == "10000.00"
    assert first["state"] == "partial"
    assert first["days_outstanding"] == 53
    assert first["days_overdue"] == 38
    juan = run(ctx, "payment_status", customer="juan pérez")
    assert juan.data["total_owed"] == "10000.00"
    assert juan.data["customer"]["id"] == shop.juan.pk
    one = run(ctx, "payment_status", invoice_number=paid.number)
    assert one.data["invoices"][0]["state"] == "paid"
    assert one.data["total_owed"] == "0.00"


def test_quote_create_prices_services_from_the_list(ctx: TurnContext, shop: Shop) -> None:
    result = run(
        ctx,
        "quote_create",
        customer_id=shop.juan.pk,
        services=["instalación de split", "carga de gas"],
    )
    assert result.ok, result.error
    quote = result.data["quote"]
    assert quote["number"] == "P-000001"
    assert [line["unit_price"] for line in quote["lines"]] == ["150000.00", "60000.00"]
    assert quote["net"] == "210000.00"
    assert quote["iva"] == {"21": "31500.00", "10.5": "6300.00"}
    assert quote["total"] == "247800.00"
    assert Quote.objects.get(pk=quote["id"]).organisation == ctx.organisation


def test_quote_create_with_an_explicit_amount_and_reduced_iva(ctx: TurnContext, shop: Shop) -> None:
    result = run(
        ctx,
        "quote_create",
        customer="María González",
        services="reparación de caldera",
        amount="640000",
        iva_rate=10.5,
    )
    assert result.ok, result.error
    quote = result.data["quote"]
    assert quote["lines"][0]["description"] == "reparación de caldera"
    assert quote["total"] == "707200.00"


def test_quote_create_without_a_match_asks_for_an_amount(ctx: TurnContext, shop: Shop) -> None:
    before = Quote.objects.count()
    result = run(ctx, "quote_create", customer_id=shop.juan.pk, services=["pintar la casa"])
    assert not result.ok
    assert "give an amount" in result.error
    assert Quote.objects.count() == before


def test_quote_create_rejects_an_unknown_iva_rate(ctx: TurnContext, shop: Shop) -> None:
    result = run(ctx, "quote_create", customer_id=shop.juan.pk, amount="100", iva_rate="27")
    assert not result.ok
    assert "argument 'iva_rate' must be one of 21, 10.5" in result.error


def test_invoice_create_invoices_a_job_from_its_quote(ctx: TurnContext, shop: Shop) -> None:
    job = factories.make_job(ctx.organisation, shop.maria, at(MONDAY, 9), status="done")
    quoted = run(ctx, "quote_create", job_id=job.pk, items=[shop.split.code])
    assert quoted.ok, quoted.error
    result = run(ctx, "invoice_create", job_id=job.pk)
    assert result.ok, result.error
    invoice = result.data["invoice"]
    assert invoice["letter"] == "A"  # a company with a CUIT
    assert invoice["customer"] == "María González SRL"
    assert invoice["total"] == "181500.00"
    assert invoice["balance"] == "181500.00"
    again = run(ctx, "invoice_create", job_id=job.pk)
    assert not again.ok
    assert again.data["codes"] == {"job": "already_invoiced"}


def test_the_outsider_never_reaches_the_first_organisation(
    ctx: TurnContext, outsider_ctx: TurnContext, shop: Shop
) -> None:
    job = factories.make_job(ctx.organisation, shop.juan, at(MONDAY, 9))
    factories.make_invoice(ctx.organisation, shop.juan, Decimal("1000"))
    assert run(outsider_ctx, "payment_status").data["invoices"] == []
    assert not run(outsider_ctx, "payment_status", customer_id=shop.juan.pk).ok
    assert run(outsider_ctx, "price_list").data["items"] == []
    for name, arguments in [
        ("quote_create", {"customer_id": shop.juan.pk, "amount": "100"}),
        ("quote_create", {"job_id": job.pk, "amount": "100"}),
        ("invoice_create", {"job_id": job.pk, "amount": "100"}),
    ]:
        result = run(outsider_ctx, name, **arguments)
        assert not result.ok, name
        assert "not found" in result.error, name
    # A price-list code of the first organisation is not in the outsider's list.
    foreign_code = run(
        outsider_ctx, "quote_create", customer_id=shop.foreign_customer.pk, items=[shop.split.code]
    )
    assert not foreign_code.ok
    assert foreign_code.data["codes"] == {"lines": "invalid"}
    assert Quote.objects.count() == 0
    assert Invoice.objects.filter(organisation=ctx.organisation).count() == 1
