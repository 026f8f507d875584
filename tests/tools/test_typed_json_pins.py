"""The customer and financial tools' JSON, pinned byte for byte (issue 25.4): what a model, a
ToolCall row, an event and the customer screen read stays what the dicts gave when the tools
return typed results. Each call runs on fixed rows at the tools' fixed Monday; the literals were
checked against the code before the migration."""

from __future__ import annotations

import datetime
import json
from decimal import Decimal
from typing import Any

import pytest

from agents.context import TurnContext
from agents.financial.tools import FoundQuote, PaymentStatus, QuoteResult
from agents.payloads import CustomerFile, PriceList
from business.models import Customer, Invoice, Job, Quote
from tests import factories
from tests.tools.conftest import BA, MONDAY, Shop, at, run

pytestmark = pytest.mark.django_db


def _same(result: Any, data: dict[str, Any], summary: str) -> None:
    """The call's JSON as text: the same keys, in the same order, with the same values."""
    expected = {"ok": True, "data": data, "summary": summary, "error": ""}
    assert json.dumps(result.as_dict()) == json.dumps(expected)


def _customer(row: Customer, **changed: Any) -> dict[str, Any]:
    return {
        "id": row.pk, "name": row.name, "kind": row.kind, "cuit": row.cuit, "phone": "",
        "email": "", "address": str(row.primary_address), "zone": "CABA", **changed,
    }  # fmt: skip


def _job(row: Job, status: str, start: str, end: str, technician: Any = None) -> dict[str, Any]:
    return {
        "id": row.pk, "customer_id": row.customer_id, "customer": "María González SRL",
        "service": "Service de aire acondicionado", "skill": "ac", "status": status,
        "start": start, "end": end, "technician_id": technician.pk if technician else None,
        "technician": technician.name if technician else None, "vehicle_id": None,
        "vehicle": None, "address": str(row.address), "zone": "CABA",
    }  # fmt: skip


def _owed(invoice: Invoice, customer: Customer) -> dict[str, Any]:
    return {
        "id": invoice.pk, "number": invoice.number, "letter": "B", "status": "issued",
        "state": "partial", "customer_id": customer.pk, "job_id": None,
        "issued_on": "2026-10-01", "due_on": "2026-10-16", "total": "12100.00",
        "paid": "2100.00", "balance": "10000.00", "pdf": f"/invoices/{invoice.pk}/pdf/",
    }  # fmt: skip


_LINES = [{
    "description": "Instalación de split hasta 3000 frigorías", "quantity": "1",
    "unit_price": "150000.00", "iva_rate": "21", "net": "150000.00", "total": "181500.00",
}]  # fmt: skip


@pytest.fixture
def maria_file(ctx: TurnContext, shop: Shop) -> dict[str, Any]:
    """María's file: a visit done this morning, one on Wednesday, a split, a partly paid
    invoice."""
    org = ctx.organisation
    done = factories.make_job(org, shop.maria, at(MONDAY, 9), technician=shop.lucia, status="done")
    coming = factories.make_job(org, shop.maria, at(MONDAY + datetime.timedelta(days=2), 14))
    split = factories.make_equipment(
        org, shop.maria, brand="Surrey", model="619", installed_on=datetime.date(2024, 1, 10),
        last_service_on=datetime.date(2025, 12, 1),
    )  # fmt: skip
    invoice = factories.make_invoice(
        org, shop.maria, Decimal("10000"), issued_on=datetime.date(2026, 10, 1),
        due_on=datetime.date(2026, 10, 16),
    )  # fmt: skip
    factories.make_payment(org, invoice, "2100")
    return {"done": done, "coming": coming, "split": split, "invoice": invoice}


def test_cuit_check_json(ctx: TurnContext) -> None:
    _same(run(ctx, "cuit_check", cuit="30-71234567-1"), {
        "cuit": "30-71234567-1", "valid": True, "problem": None, "length": 11, "prefix": "30",
        "kind": "company", "given_check_digit": None, "expected_check_digit": None,
    }, "30-71234567-1 valid")  # fmt: skip
    _same(run(ctx, "cuit_check", cuit="20123456780"), {
        "cuit": "20-12345678-0", "valid": False, "problem": "check_digit", "length": 11,
        "prefix": "20", "kind": None, "given_check_digit": 0, "expected_check_digit": 6,
    }, "20-12345678-0 invalid: check_digit (expected 6)")  # fmt: skip
    _same(run(ctx, "cuit_check", cuit="12-3"), {
        "cuit": "12-3", "valid": False, "problem": "length", "length": 3, "prefix": "12",
        "kind": None, "given_check_digit": None, "expected_check_digit": None,
    }, "12-3 invalid: length")  # fmt: skip


def test_customer_tools_json(ctx: TurnContext, shop: Shop, maria_file: dict[str, Any]) -> None:
    maria = shop.maria
    _same(
        run(ctx, "customers_find", query="gonzález"),
        {"customers": [_customer(maria)], "truncated": False},
        "1 customers",
    )
    split = maria_file["split"]
    _same(run(ctx, "customer_history", customer_id=maria.pk), {
        "customer": _customer(maria),
        "jobs": [
            _job(maria_file["coming"], "scheduled", "2026-11-25T14:00-03:00",
                 "2026-11-25T16:00-03:00"),
            _job(maria_file["done"], "done", "2026-11-23T09:00-03:00", "2026-11-23T11:00-03:00",
                 shop.lucia),
        ],
        "upcoming_job_ids": [maria_file["coming"].pk],
        "equipment": [{
            "id": split.pk, "customer_id": maria.pk, "kind": "Split", "skill": "ac",
            "brand": "Surrey", "model": "619", "installed_on": "2024-01-10",
            "last_service_on": "2025-12-01", "next_service_on": "2026-12-01",
        }],
        "invoices": [_owed(maria_file["invoice"], maria)],
        "balance": "10000.00",
    }, f"customer #{maria.pk}: 2 jobs, 1 invoices")  # fmt: skip
    updated = run(ctx, "customer_update", customer_id=maria.pk, phone="11 4444-1111")
    _same(updated, {
        "customer": _customer(maria, phone="+541144441111"),
        "before": _customer(maria),
        "changed": ["phone"],
    }, f"customer #{maria.pk} updated")  # fmt: skip
    created = run(
        ctx, "customer_create", name="Ana Ruiz", phone="11 5555-0000", street="Belgrano 100",
        city="Lanús", confirmed_new=True,
    )  # fmt: skip
    ana = Customer.objects.get(organisation=ctx.organisation, name="Ana Ruiz")
    address = ana.primary_address
    assert address is not None
    _same(created, {"customer": {
        "id": ana.pk, "name": "Ana Ruiz", "kind": "person", "cuit": "", "phone": "+541155550000",
        "email": "", "address": str(address), "zone": address.zone,
    }}, f"customer #{ana.pk} created")  # fmt: skip


def test_financial_tools_json(ctx: TurnContext, shop: Shop, maria_file: dict[str, Any]) -> None:
    maria, old = shop.maria, maria_file["invoice"]
    _same(run(ctx, "price_list", query="split"), {"items": [{
        "id": shop.split.pk, "code": shop.split.code,
        "name": "Instalación de split hasta 3000 frigorías", "category": "ac",
        "unit_price": "150000.00", "iva_rate": "21",
    }], "currency": "ARS"}, "1 price items")  # fmt: skip
    owed = {
        **_owed(old, maria), "customer": "María González SRL", "days_outstanding": 53,
        "days_overdue": 38,
    }  # fmt: skip
    everyone = {"customer": None, "invoices": [owed], "total_owed": "10000.00",
                "oldest_since": "2026-10-01", "currency": "ARS"}  # fmt: skip
    _same(run(ctx, "payment_status"), everyone, "1 invoices, 10000.00 owed")
    _same(
        run(ctx, "payment_status", customer_id=maria.pk),
        {**everyone, "customer": _customer(maria)},
        "1 invoices, 10000.00 owed",
    )
    _same(
        run(ctx, "payment_status", invoice_number=old.number),
        everyone,
        "1 invoices, 10000.00 owed",
    )
    job = maria_file["done"]
    made = run(ctx, "quote_create", job_id=job.pk, items=[shop.split.code])
    quote = Quote.objects.get(organisation=ctx.organisation)
    assert quote.valid_until is not None
    quoted = {
        "id": quote.pk, "number": "P-000001", "status": "draft", "customer_id": maria.pk,
        "customer": "María González SRL", "job_id": job.pk,
        "created_on": quote.created_at.astimezone(BA).date().isoformat(),
        "valid_until": quote.valid_until.isoformat(), "lines": _LINES, "net": "150000.00",
        "iva": {"21": "31500.00"}, "iva_total": "31500.00", "total": "181500.00",
        "pdf": f"/quotes/{quote.pk}/pdf/",
    }  # fmt: skip
    _same(made, {"quote": quoted}, "quote P-000001 created")
    _same(
        run(ctx, "quote_find", number="1"),
        {"quote": {**quoted, "invoice": None}},
        "quote P-000001 (draft)",
    )
    issued = run(ctx, "invoice_create", job_id=job.pk)
    invoice = Invoice.objects.get(organisation=ctx.organisation, job=job)
    assert invoice.due_on is not None
    _same(issued, {"invoice": {
        "id": invoice.pk, "number": invoice.number, "letter": "A", "status": "issued",
        "state": "unpaid", "customer_id": maria.pk, "job_id": job.pk,
        "issued_on": invoice.issued_on.isoformat(), "due_on": invoice.due_on.isoformat(),
        "total": "181500.00", "paid": "0.00", "balance": "181500.00",
        "pdf": f"/invoices/{invoice.pk}/pdf/", "customer": "María González SRL",
        "lines": _LINES, "net": "150000.00", "iva": {"21": "31500.00"},
        "iva_total": "31500.00",
    }}, f"invoice A {invoice.number} issued")  # fmt: skip
    _same(
        run(ctx, "quote_find", number="P-000001"),
        {"quote": {**quoted, "invoice": f"A {invoice.number}"}},
        "quote P-000001 (draft)",
    )


def test_the_typed_values_say_what_the_json_says(
    ctx: TurnContext, shop: Shop, maria_file: dict[str, Any]
) -> None:
    """What the handlers read (Kind.of): Decimals, days and rows, not strings; another tool's
    result, or a failed call, is None."""
    owed = PaymentStatus.of(run(ctx, "payment_status", customer_id=shop.maria.pk))
    assert owed is not None and owed.customer is not None
    assert (owed.customer.id, owed.total_owed, owed.oldest_since) == (
        shop.maria.pk, Decimal("10000.00"), datetime.date(2026, 10, 1)
    )  # fmt: skip
    [invoice] = owed.invoices
    assert (invoice.label, invoice.paid, invoice.days_overdue) == (
        f"B {maria_file['invoice'].number}", Decimal("2100.00"), 38
    )  # fmt: skip
    file = CustomerFile.of(run(ctx, "customer_history", customer_id=shop.maria.pk))
    assert file is not None
    assert [job.start.hour for job in file.jobs] == [14, 9]  # on Buenos Aires' clock
    assert file.upcoming_job_ids == (maria_file["coming"].pk,)
    made = run(ctx, "quote_create", customer_id=shop.juan.pk, services=["carga de gas"])
    quote = QuoteResult.of(made)
    assert quote is not None and not isinstance(quote.quote, FoundQuote)
    assert [(line.iva_rate, line.total) for line in quote.quote.lines] == [
        (Decimal("10.5"), Decimal("66300.00"))
    ]
    found = QuoteResult.of(run(ctx, "quote_find", number=quote.quote.number))
    assert found is not None and isinstance(found.quote, FoundQuote) and found.quote.invoice is None
    assert PriceList.of(made) is None  # another kind
    refused = run(ctx, "quote_create", customer_id=shop.juan.pk, services=["pintar la casa"])
    assert not refused.ok and QuoteResult.of(refused) is None
