"""Customer tools on real rows: finding, history, registering, updating and CUIT checks."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest

from agents.context import TurnContext
from business.models import Customer
from tests import factories
from tests.tools.conftest import MONDAY, Shop, at, run

pytestmark = pytest.mark.django_db


def test_customers_find_matches_name_phone_and_cuit(ctx: TurnContext, shop: Shop) -> None:
    # Accents and case do not matter: "perez" finds "Pérez".
    assert [c["id"] for c in run(ctx, "customers_find", query="perez").data["customers"]] == [
        shop.juan.pk
    ]
    assert run(ctx, "customers_find", query="45678901").data["customers"][0]["id"] == shop.juan.pk
    by_cuit = run(ctx, "customers_find", query="30-71234567-1").data["customers"]
    assert by_cuit[0]["name"] == "María González SRL"
    assert run(ctx, "customers_find", query="nadie").data == {"customers": [], "truncated": False}


def test_customer_history_has_jobs_equipment_invoices_and_balance(
    ctx: TurnContext, shop: Shop
) -> None:
    org = ctx.organisation
    done = factories.make_job(
        org, shop.juan, at(MONDAY - datetime.timedelta(days=30), 9), status="done"
    )
    upcoming = factories.make_job(org, shop.juan, at(MONDAY, 10), technician=shop.carlos)
    factories.make_equipment(
        org, shop.juan, brand="BGH", last_service_on=datetime.date(2025, 11, 1)
    )
    paid = factories.make_invoice(org, shop.juan, Decimal("1000"), job=done)
    factories.make_payment(org, paid, "1210")
    factories.make_invoice(org, shop.juan, Decimal("10000"))
    result = run(ctx, "customer_history", customer_id=shop.juan.pk)
    assert result.ok, result.error
    data = result.data
    assert data["customer"]["name"] == "Juan Pérez"
    assert [j["id"] for j in data["jobs"]] == [upcoming.pk, done.pk]
    assert data["upcoming_job_ids"] == [upcoming.pk]
    assert data["equipment"][0]["next_service_on"] == "2026-11-01"
    assert sorted(i["state"] for i in data["invoices"]) == ["paid", "unpaid"]
    assert data["balance"] == "12100.00"  # 10000 + 21 % IVA, the paid one counts nothing


def test_customer_create_registers_a_new_customer(ctx: TurnContext, shop: Shop) -> None:
    result = run(
        ctx,
        "customer_create",
        name="Ana Torres",
        phone="11 2345-6789",
        street="Hipólito Yrigoyen 1234",
        city="Lanús",
        cuit="20123456786",
    )
    assert result.ok, result.error
    created = Customer.objects.get(pk=result.data["customer"]["id"])
    assert created.organisation == ctx.organisation
    assert created.phone == "+541123456789"
    assert created.cuit == "20-12345678-6"
    assert result.data["customer"]["zone"] == "Sur"


def test_a_typed_namesake_is_a_likely_duplicate_and_nothing_is_created(
    ctx: TurnContext, shop: Shop
) -> None:
    before = Customer.objects.count()
    # No accents, one letter wrong, the words the other way round: still Juan Pérez. (At another
    # street than any the factories write — theirs are "Av. Mitre <counter>", and a counter at 100
    # made this an address match too, depending on the tests run before it.)
    result = run(ctx, "customer_create", name="peres juan", street="Belgrano 100", zone="Sur")
    assert not result.ok
    assert result.data["code"] == "possible_duplicate"
    assert [(c["id"], c["matched"]) for c in result.data["duplicates"]] == [
        (shop.juan.pk, ["name"])
    ]
    # What the model reads: who is on file, and what to do next.
    assert f"#{shop.juan.pk} Juan Pérez (similar name)" in result.error
    assert "confirmed_new=true" in result.error
    assert Customer.objects.count() == before
    confirmed = run(
        ctx, "customer_create", name="peres juan", street="Mitre 100", zone="Sur",
        confirmed_new=True,
    )  # fmt: skip
    assert confirmed.ok, confirmed.error
    assert Customer.objects.count() == before + 1


def test_the_same_phone_under_another_name_is_a_likely_duplicate(
    ctx: TurnContext, shop: Shop
) -> None:
    result = run(ctx, "customer_create", name="Roberto Díaz", phone="011 4567-8901")
    assert not result.ok
    assert [(c["id"], c["matched"]) for c in result.data["duplicates"]] == [
        (shop.juan.pk, ["phone"])
    ]


def test_customer_create_with_a_bad_cuit_writes_nothing(ctx: TurnContext, shop: Shop) -> None:
    before = Customer.objects.count()
    result = run(ctx, "customer_create", name="Ana Díaz", cuit="20-12345678-0")
    assert not result.ok
    assert result.data["codes"] == {"cuit": "check_digit"}
    assert result.error.startswith("cuit: ")
    assert Customer.objects.count() == before


def test_customer_update_changes_only_what_is_given(ctx: TurnContext, shop: Shop) -> None:
    result = run(ctx, "customer_update", customer_id=shop.juan.pk, email="JUAN@example.com")
    assert result.ok, result.error
    shop.juan.refresh_from_db()
    assert shop.juan.email == "juan@example.com"
    assert shop.juan.phone == "+541145678901"
    assert result.data["changed"] == ["email"]
    cleared = run(ctx, "customer_update", customer_id=shop.juan.pk, email="")
    assert cleared.ok
    shop.juan.refresh_from_db()
    assert shop.juan.email == ""


def test_customer_update_without_fields_is_an_error(ctx: TurnContext, shop: Shop) -> None:
    result = run(ctx, "customer_update", customer_id=shop.juan.pk)
    assert not result.ok
    assert result.error == "nothing to change: give at least one field"


@pytest.mark.parametrize(
    ("cuit", "valid", "problem", "expected"),
    [
        ("20-12345678-6", True, None, None),
        ("20123456786", True, None, None),
        ("20-12345678-0", False, "check_digit", 6),
        ("2012345678", False, "length", None),
        ("99-12345678-6", False, "prefix", None),
        ("20-1234567A-6", False, "not_digits", None),
    ],
)
def test_cuit_check_says_why(
    ctx: TurnContext, cuit: str, valid: bool, problem: str | None, expected: int | None
) -> None:
    result = run(ctx, "cuit_check", cuit=cuit)
    assert result.ok
    assert result.data["valid"] is valid
    assert result.data["problem"] == problem
    assert result.data["expected_check_digit"] == expected
    if valid:
        assert result.data["cuit"] == "20-12345678-6"
        assert result.data["kind"] == "person"


def test_the_outsider_never_reaches_the_first_organisation(
    ctx: TurnContext, outsider_ctx: TurnContext, shop: Shop
) -> None:
    history = run(outsider_ctx, "customer_history", customer_id=shop.juan.pk)
    assert not history.ok and history.error == f"customer {shop.juan.pk} not found"
    update = run(outsider_ctx, "customer_update", customer_id=shop.juan.pk, name="Hackeado")
    assert not update.ok and "not found" in update.error
    shop.juan.refresh_from_db()
    assert shop.juan.name == "Juan Pérez"
    found = run(outsider_ctx, "customers_find", query="Pérez").data["customers"]
    assert [c["id"] for c in found] == [shop.foreign_customer.pk]
    # The same CUIT may exist in another organisation: no cross-tenant duplicate check.
    created = run(outsider_ctx, "customer_create", name="Otra SRL", cuit="30-71234567-1")
    assert created.ok, created.error


def test_another_organisations_identical_customer_is_no_duplicate(
    ctx: TurnContext, shop: Shop
) -> None:
    foreign = shop.foreign_customer  # "Juan Pérez" of the other organisation only
    foreign.phone = "+541122223333"
    foreign.save()
    foreign.addresses.update(street="Calle Ajena 1")
    shop.juan.delete()
    result = run(
        ctx, "customer_create", name="Juan Pérez", phone="11 2222-3333", street="Calle Ajena 1",
        zone="Sur",
    )  # fmt: skip
    assert result.ok, result.error


def test_customer_history_and_update_by_name(ctx: TurnContext, shop: Shop) -> None:
    history = run(ctx, "customer_history", customer="maría gonzález")
    assert history.ok, history.error
    assert history.data["customer"]["id"] == shop.maria.pk
    assert history.data["balance"] == "0.00"
    updated = run(ctx, "customer_update", customer="Juan Pérez", phone="011 4444-5555")
    assert updated.ok, updated.error
    shop.juan.refresh_from_db()
    assert shop.juan.phone == "+541144445555"
    assert not run(ctx, "customer_history").ok
