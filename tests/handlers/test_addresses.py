"""A booking's address: with no customer named it finds the customer who is there (or asks,
keeping the address); with a customer it books at that address only if it is one of theirs."""

from __future__ import annotations

from typing import Any

import pytest

from agents.scheduling.agent import book_job
from business.models import Address, Job
from tests.handlers.conftest import TUESDAY, Desk, Shop, Turn, assert_no_foreign_data, at

pytestmark = pytest.mark.django_db


def _book(desk: Desk, **entities: Any) -> Turn:
    return desk.run(book_job, "book_job", "scheduling", date=TUESDAY, time="10:00", **entities)


def test_an_address_without_a_customer_books_for_the_customer_there(desk: Desk, shop: Shop) -> None:
    shop.juan.addresses.update(street="Av. Cabildo 500")
    turn = _book(desk, address="Cabildo 500", text="agendá un service en Cabildo 500 el martes")
    job = Job.objects.get(customer=shop.juan)
    assert job.scheduled_start == at(TUESDAY, 10)
    assert turn.text.startswith("Listo, te agendé a Juan Pérez el martes 24/11 10:00")
    assert turn.text.endswith("Lo agendé para Juan Pérez, el cliente que tengo en Cabildo 500.")


def test_an_address_nobody_has_is_asked_about_and_kept(desk: Desk, shop: Shop) -> None:
    turn = _book(desk, address="Thames 1200", text="agendá un service en calle Thames 1200")
    assert not turn.outcome.success
    assert turn.text.startswith(
        "¿Para qué cliente es el trabajo en Thames 1200? No tengo ningún cliente con esa dirección"
    )
    assert not Job.objects.filter(organisation=shop.juan.organisation).exists()


def test_another_organisations_address_finds_nobody(desk: Desk, shop: Shop) -> None:
    turn = _book(desk, address="Calle Ajena 1")
    assert "No tengo ningún cliente con esa dirección" in turn.text
    assert not Job.objects.filter(organisation=shop.juan.organisation).exists()
    assert_no_foreign_data(turn.text.replace("Calle Ajena 1?", ""))


def test_a_customers_second_address_is_where_the_job_goes(desk: Desk, shop: Shop) -> None:
    second = Address.objects.create(
        organisation=shop.juan.organisation, customer=shop.juan, street="Thames 1200",
        zone="CABA", is_primary=False,
    )  # fmt: skip
    turn = _book(desk, customer="Juan Pérez", address="Thames 1200")
    assert turn.outcome.success, turn.outcome.error
    assert Job.objects.get(customer=shop.juan).address == second


def test_an_address_that_is_not_the_customers_books_nothing(desk: Desk, shop: Shop) -> None:
    turn = _book(desk, customer="Juan Pérez", address="Cabildo 500")
    assert not turn.outcome.success
    assert turn.text.startswith(
        "No agendé nada: Cabildo 500 no es una dirección registrada de Juan Pérez (tengo "
        "registrada Av. Mitre"
    )
    assert not Job.objects.filter(customer=shop.juan).exists()


@pytest.mark.parametrize("typed", ["Av. Cabildo 500", "Cabildo al 500", "avenida cabildo 500"])
def test_the_customer_is_found_by_the_rule_the_booking_checks_with(
    desk: Desk, shop: Shop, typed: str
) -> None:
    shop.juan.addresses.update(street="Cabildo 500")
    turn = _book(desk, address=typed)
    assert turn.outcome.success, turn.text
    assert Job.objects.filter(customer=shop.juan).count() == 1


def test_a_door_number_that_only_starts_the_same_finds_nobody(desk: Desk, shop: Shop) -> None:
    shop.juan.addresses.update(street="Cabildo 5000")
    turn = _book(desk, address="Cabildo 500")  # a substring of Juan's street, not his address
    assert not turn.outcome.success
    assert "No tengo ningún cliente con esa dirección" in turn.text
    assert not Job.objects.filter(organisation=shop.juan.organisation).exists()
