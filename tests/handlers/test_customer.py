"""The customer agent's handlers: register, search and update customers; validate CUITs."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from agents.base import Mutation
from agents.customer.agent import (
    create_customer,
    search_customer,
    update_customer,
    validate_cuit,
)
from agents.models import Agent
from approvals.models import PendingAction
from business.models import Customer
from tests import factories
from tests.handlers.conftest import TUESDAY, Desk, Shop, Turn, assert_no_foreign_data, at

pytestmark = pytest.mark.django_db


def _create(desk: Desk, text: str, **kwargs: Any) -> Turn:
    return desk.run(create_customer, "create_customer", "customer", text=text, **kwargs)


# --- create_customer ------------------------------------------------------------------------


def test_create_customer_reads_phone_address_and_cuit_from_the_text(desk: Desk, shop: Shop) -> None:
    text = "registrá a Ana Torres, tel 11 4567-1234, en Av. Mitre 1234, Lanús, CUIT 27-33445566-7"
    turn = _create(desk, text, customer="Ana Torres", cuit="27-33445566-7")
    ana = Customer.objects.get(organisation=shop.juan.organisation, name="Ana Torres")
    address = ana.primary_address
    assert turn.outcome.success, turn.outcome.error
    assert (ana.phone, ana.cuit, ana.kind) == ("+541145671234", "27-33445566-7", "person")
    assert address is not None
    assert (address.street, address.city, address.zone) == ("Av. Mitre 1234", "Lanús", "Sur")
    assert turn.text.startswith(f"Listo, registré a Ana Torres (cliente #{ana.pk}): tel. +54 11")
    assert turn.outcome.mutations == [
        Mutation(kind="customer", id=ana.pk, label="Ana Torres", data={"created": True})
    ]
    assert turn.tools == ["cuit_check", "customer_create"]


@pytest.mark.parametrize(
    ("text", "street", "city"),
    [
        ("registrá a Ana Torres, tel 11 4567-1234, vive en Av. Mitre 1234, Lanús",
         "Av. Mitre 1234", "Lanús"),
        ("registrá a Ana Torres con domicilio en Av. Mitre 1234, Lanús", "Av. Mitre 1234", "Lanús"),
        ("dá de alta a Ana Torres, domicilio: Mitre 1234, Lanús", "Mitre 1234", "Lanús"),
        ("registrá a Ana Torres, su dirección es Mitre 1234, Lanús", "Mitre 1234", "Lanús"),
        ("registrá a Ana Torres, en la calle Mitre 1234, Lanús", "Mitre 1234", "Lanús"),
        ("register Ana Torres, she lives at 1234 Mitre Ave, Lanús", "1234 Mitre Ave", "Lanús"),
        ("register Ana Torres, address Av. Mitre 1234, Lanús", "Av. Mitre 1234", "Lanús"),
        ("register Ana Torres, her address is 1234 Mitre St, Lanús", "1234 Mitre St", "Lanús"),
    ],
)  # fmt: skip
def test_create_customer_reads_the_address_however_it_is_introduced(
    desk: Desk, shop: Shop, text: str, street: str, city: str
) -> None:
    turn = _create(desk, text, customer="Ana Torres")

    assert turn.outcome.success, turn.outcome.error
    ana = Customer.objects.get(organisation=shop.juan.organisation, name="Ana Torres")
    address = ana.primary_address
    assert address is not None
    assert (address.street, address.city, address.zone) == (street, city, "Sur")


def test_a_likely_duplicate_is_a_question_not_a_second_customer(desk: Desk, shop: Shop) -> None:
    org = shop.juan.organisation
    turn = _create(desk, "alta de Juan Peres", customer="Juan Peres", language="en")
    assert Customer.objects.filter(organisation=org, name__startswith="Juan P").count() == 1
    assert turn.outcome.clarify is not None and turn.outcome.clarify.slot == "duplicate"
    same = f"Is this the same as Juan Pérez (#{shop.juan.pk}) — +54 11 4567-8901"
    assert turn.text.startswith(same)
    assert "(similar name)" in turn.text and "“it's a new one”" in turn.text
    assert_no_foreign_data(turn.text)


def test_the_same_phone_asks_in_spanish(desk: Desk, shop: Shop) -> None:
    turn = _create(desk, "registrá a Roberto Díaz, tel 011 4567-8901", customer="Roberto Díaz")
    assert turn.outcome.clarify is not None
    assert turn.text.startswith(f"¿Es el mismo que Juan Pérez (#{shop.juan.pk})")
    assert "(mismo teléfono)" in turn.text and "«es otro»" in turn.text
    assert not Customer.objects.filter(name="Roberto Díaz").exists()


@pytest.mark.parametrize("answer", ["sí", "sí, es el mismo", "es ese", "yes, that's the one"])
def test_yes_uses_the_customer_on_file(desk: Desk, shop: Shop, answer: str) -> None:
    before = Customer.objects.count()
    turn = _create(desk, f"alta de Juan Peres\n{answer}", customer="Juan Peres", resumed=True)
    assert turn.outcome.success and turn.outcome.clarify is None
    assert Customer.objects.count() == before
    assert turn.outcome.mutations == [
        Mutation(kind="customer", id=shop.juan.pk, label="Juan Pérez", data={"created": False})
    ]
    assert "ya estaba registrado: no di de alta otro" in turn.text


@pytest.mark.parametrize("answer", ["no, es otro", "no", "es otra persona", "it's a new one"])
def test_no_registers_the_new_customer(desk: Desk, shop: Shop, answer: str) -> None:
    turn = _create(desk, f"alta de Juan Peres\n{answer}", customer="Juan Peres", resumed=True)
    assert turn.outcome.success, turn.outcome.error
    created = turn.outcome.mutations[0]
    assert created.id != shop.juan.pk and created.data == {"created": True}
    assert Customer.objects.get(pk=created.id).name == "Juan Peres"
    assert turn.tools == ["customer_create"]  # straight to it, confirmed


def test_several_look_alikes_are_listed_and_the_answer_picks_one(desk: Desk, shop: Shop) -> None:
    org = shop.juan.organisation
    other = factories.make_customer(org, "Juan Perez Hnos", phone="+541133334444")
    asked = _create(desk, "alta de Juan Pérez", customer="Juan Pérez")
    assert asked.outcome.clarify is not None
    assert f"- Juan Pérez (#{shop.juan.pk})" in asked.text
    assert f"- Juan Perez Hnos (#{other.pk})" in asked.text
    picked = _create(
        desk, f"alta de Juan Pérez\nsí, #{other.pk}", customer="Juan Pérez", resumed=True
    )
    assert picked.outcome.mutations[0].id == other.pk
    which = _create(desk, "alta de Juan Pérez\nsí", customer="Juan Pérez", resumed=True)
    assert which.outcome.clarify is not None and which.outcome.clarify.slot == "customer_choice"


def test_best_effort_takes_the_one_on_file(desk: Desk, shop: Shop) -> None:
    turn = _create(
        desk, "alta de Juan Peres\nmmm", customer="Juan Peres", resumed=True, best_effort=True
    )
    assert turn.outcome.clarify is None
    assert turn.outcome.mutations[0].id == shop.juan.pk
    assert "Si es otro cliente, pedime que lo registre diciendo que es nuevo." in turn.text


def test_best_effort_with_several_look_alikes_states_it_and_creates_nothing(
    desk: Desk, shop: Shop
) -> None:
    factories.make_customer(shop.juan.organisation, "Juan Perez Hnos")
    before = Customer.objects.count()
    turn = _create(
        desk, "alta de Juan Pérez\nmmm", customer="Juan Pérez", resumed=True, best_effort=True
    )
    assert turn.outcome.clarify is None and Customer.objects.count() == before
    assert turn.text == (
        "No pude dar de alta al cliente: ya hay clientes parecidos registrados y no sé si es "
        "alguno de ellos. No hice ningún cambio."
    )


def test_a_likely_duplicate_is_asked_about_before_any_manager_sees_it(
    desk: Desk, shop: Shop
) -> None:
    Agent.objects.filter(pk=desk.agents["customer"].pk).update(
        requires_approval_for=["customer_create"]
    )
    desk.agents["customer"].refresh_from_db()
    turn = _create(desk, "alta de Juan Peres", customer="Juan Peres")
    assert turn.outcome.clarify is not None and turn.outcome.clarify.slot == "duplicate"
    assert not PendingAction.objects.exists()
    confirmed = _create(desk, "alta de Juan Peres\nes otro", customer="Juan Peres", resumed=True)
    held = PendingAction.objects.get()  # confirmed: now it is the manager's to decide
    assert held.tool == "customer_create" and held.arguments["confirmed_new"] is True
    assert "Juan Peres" in confirmed.text


def test_a_search_phrasing_read_as_a_registration_searches(desk: Desk, shop: Shop) -> None:
    before = Customer.objects.count()
    turn = _create(desk, "buscame el cliente Juan Pérez", customer="Juan Pérez")
    assert Customer.objects.count() == before
    assert turn.text.startswith(f"Juan Pérez (cliente #{shop.juan.pk}):")
    assert turn.tools == ["customers_find", "customer_history"]


def test_create_customer_with_an_invalid_cuit_explains_and_creates_nothing(
    desk: Desk, shop: Shop
) -> None:
    before = Customer.objects.count()
    turn = _create(
        desk, "registrá a Ana Torres, CUIT 20-12345678-9", customer="Ana Torres",
        cuit="20-12345678-9",
    )  # fmt: skip
    assert Customer.objects.count() == before
    assert not turn.outcome.success and turn.outcome.error == "invalid cuit: check_digit"
    assert "el dígito verificador es 9 y debería ser 6" in turn.text
    assert turn.tools == ["cuit_check"]


def test_create_customer_without_a_name_asks_for_it(desk: Desk, shop: Shop) -> None:
    turn = _create(desk, "dame de alta un cliente nuevo")
    assert turn.outcome.error == "missing name" and turn.tools == []


def test_create_customer_in_an_unknown_locality_asks_for_the_zone(desk: Desk, shop: Shop) -> None:
    turn = _create(
        desk, "registrá a Ana Torres en Calle Falsa 123, Springfield", customer="Ana Torres"
    )
    assert not turn.outcome.success
    assert "No sé en qué zona queda esa localidad: ¿es CABA, Norte, Sur, Oeste o La Plata?" in (
        turn.text
    )
    assert not Customer.objects.filter(name="Ana Torres").exists()


# --- search_customer ------------------------------------------------------------------------


def test_search_shows_contact_open_jobs_and_balance(desk: Desk, shop: Shop) -> None:
    org = shop.juan.organisation
    job = factories.make_job(org, shop.juan, at(TUESDAY, 10), technician=shop.carlos)
    invoice = factories.make_invoice(org, shop.juan, Decimal("100000"))
    factories.make_payment(org, invoice, "21000")
    turn = desk.run(search_customer, "search_customer", "customer", customer="Juan Pérez")
    assert turn.outcome.success
    head = f"Juan Pérez (cliente #{shop.juan.pk}):\n- Teléfono: +54 11 4567-8901"
    assert turn.text.startswith(head)
    assert f"- Trabajos abiertos: #{job.pk} Service de aire acondicionado" in turn.text
    assert "martes 24/11 10:00, con Carlos Gómez" in turn.text
    assert "- Debe $ 100.000,00 (1 factura impaga, desde el" in turn.text
    assert turn.outcome.mutations[0].id == shop.juan.pk
    assert turn.tools == ["customers_find", "customer_history"]
    assert_no_foreign_data(turn.text)


def test_search_with_several_matches_lists_them(desk: Desk, shop: Shop) -> None:
    factories.make_customer(shop.juan.organisation, "Juan Gómez", phone="+541100000000")
    turn = desk.run(search_customer, "search_customer", "customer", customer="Juan", language="en")
    assert turn.outcome.error == "several customers"
    assert "I found 2 customers for “Juan”:" in turn.text
    assert f"Juan Pérez (#{shop.juan.pk}) — +54 11 4567-8901" in turn.text
    assert_no_foreign_data(turn.text)


def test_search_for_an_unknown_customer_says_so(desk: Desk, shop: Shop) -> None:
    turn = desk.run(search_customer, "search_customer", "customer", customer="Roberto Nadie")
    assert not turn.outcome.success
    assert "No encontré ningún cliente que coincida con «Roberto Nadie»" in turn.text


def test_search_of_a_paid_up_customer_under_discussion(desk: Desk, shop: Shop) -> None:
    state = {"customer_id": shop.maria.pk, "customer_label": shop.maria.name}
    turn = desk.run(search_customer, "search_customer", "customer", state=state,
                    text="mostrame sus datos")  # fmt: skip
    assert "- CUIT: 30-71234567-1" in turn.text and "- Está al día: no debe nada" in turn.text
    assert turn.tools == ["customer_history"]


# --- update_customer ------------------------------------------------------------------------


def test_update_changes_the_phone_of_the_customer_under_discussion(desk: Desk, shop: Shop) -> None:
    state = {"customer_id": shop.juan.pk, "customer_label": "Juan Pérez"}
    turn = desk.run(update_customer, "update_customer", "customer", state=state,
                    text="cambiale el teléfono al 11 5555-4444")  # fmt: skip
    shop.juan.refresh_from_db()
    assert turn.outcome.success, turn.outcome.error
    assert shop.juan.phone == "+541155554444"
    assert "teléfono: +541155554444 (antes +541145678901)" in turn.text
    assert turn.tools == ["customer_update"]


def test_update_moves_a_named_customer_to_a_new_address(desk: Desk, shop: Shop) -> None:
    turn = desk.run(update_customer, "update_customer", "customer", customer="Juan Pérez",
                    text="Juan Pérez se mudó a Av. Rivadavia 5000, Caballito")  # fmt: skip
    address = shop.juan.primary_address
    assert turn.outcome.success, turn.outcome.error
    assert address is not None
    assert (address.street, address.city, address.zone) == ("Av. Rivadavia 5000", "Caballito",
                                                             "CABA")  # fmt: skip
    assert "dirección: Av. Rivadavia 5000, Caballito (CABA)" in turn.text


def test_update_adds_a_note_without_wiping_the_old_ones(desk: Desk, shop: Shop) -> None:
    Customer.objects.filter(pk=shop.juan.pk).update(notes="Tiene perro.")
    state = {"customer_id": shop.juan.pk, "customer_label": "Juan Pérez"}
    turn = desk.run(update_customer, "update_customer", "customer", state=state,
                    text="anotá que prefiere que lo llamen a la tarde")  # fmt: skip
    shop.juan.refresh_from_db()
    assert turn.outcome.success
    assert shop.juan.notes == "Tiene perro.\n[23/11/2026] prefiere que lo llamen a la tarde"


def test_update_without_the_new_value_asks_for_it(desk: Desk, shop: Shop) -> None:
    turn = desk.run(update_customer, "update_customer", "customer", customer="Juan Pérez",
                    text="cambiale el mail a Juan Pérez")  # fmt: skip
    assert turn.outcome.error == "missing value for email" and turn.tools == []


def test_update_with_an_invalid_email_changes_nothing(desk: Desk, shop: Shop) -> None:
    state = {"customer_id": shop.juan.pk, "customer_label": "Juan Pérez"}
    turn = desk.run(update_customer, "update_customer", "customer", state=state,
                    text="su mail es juan@@mal")  # fmt: skip
    shop.juan.refresh_from_db()
    assert shop.juan.email == ""
    assert not turn.outcome.success


# --- validate_cuit --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("validame el CUIT 20-12345678-6", "El CUIT 20-12345678-6 es válido (persona)."),
        ("¿es válido el 30-71234567-1?", "El CUIT 30-71234567-1 es válido (empresa)."),
        (
            "cuit 20-12345678-9",
            "El CUIT 20-12345678-9 no es válido: el dígito verificador es 9 y debería ser 6.",
        ),
        ("cuit 20-1234567-6", "no es válido: tiene 10 dígitos y un CUIT tiene 11."),
        ("cuit 12-12345678-6", "no es válido: empieza con 12, y un CUIT empieza con 20, 23"),
    ],
)
def test_validate_cuit_says_valid_or_why_not(
    desk: Desk, shop: Shop, text: str, expected: str
) -> None:
    turn = desk.run(validate_cuit, "validate_cuit", "customer", text=text)
    assert turn.outcome.success
    assert expected in turn.text


def test_validate_cuit_in_english(desk: Desk, shop: Shop) -> None:
    turn = desk.run(validate_cuit, "validate_cuit", "customer", text="check CUIT 20-12345678-9",
                    cuit="20-12345678-9", language="en")  # fmt: skip
    assert turn.text == "CUIT 20-12345678-9 is not valid: the check digit is 9 but should be 6."


def test_validate_cuit_without_a_number_asks_for_it(desk: Desk, shop: Shop) -> None:
    turn = desk.run(validate_cuit, "validate_cuit", "customer", text="validame un cuit")
    assert turn.outcome.error == "missing cuit"
