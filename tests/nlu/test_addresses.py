"""Addresses with or without the street type, and what only looks like one."""

from __future__ import annotations

import pytest

from nlu import Context, Router, Vocabulary
from nlu.entities import extract_entities
from tests.nlu.conftest import make_context


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("agendá un service en Cabildo 500 mañana a las 10", "Cabildo 500"),
        ("Cabildo 500", "Cabildo 500"),
        ("en Cabildo 500", "Cabildo 500"),
        ("123 Florida St", "123 Florida St"),
        ("book a visit at 450 Main Ave tomorrow", "450 Main Ave"),
        ("Av. Cabildo 2150", "Av. Cabildo 2150"),
        ("calle Thames 1200", "Thames 1200"),
        ("Cabildo al 500", "Cabildo al 500"),
        ("instalación en Avenida del Libertador 1500, piso 3", "Avenida del Libertador 1500"),
        ("vive en Av. Santa Fe 3200", "Av. Santa Fe 3200"),
    ],
)
def test_addresses(text: str, address: str, ctx: Context) -> None:
    assert extract_entities(text, ctx).address == address


@pytest.mark.parametrize(
    "text",
    [
        "cancelá el trabajo 362",
        "agendalo a las 10",
        "tiene 2 equipos",
        "agendá para el lunes 24 a las 10",
        "el 24 de noviembre",
        "facturale 15000 a Gómez",
        "facturale a Gómez 15000",
        "cobrale $ 1500",
        "validá el CUIT 20-12345678-6",
        "llamalo al 11 4555-1234",
        "un split Carrier 3000 frigorías",
        "la factura 12",
        "ticket #12",
    ],
)
def test_what_is_not_an_address(text: str, ctx: Context) -> None:
    assert extract_entities(text, ctx).address is None


def test_an_address_keeps_the_time_date_and_service(ctx: Context) -> None:
    entities = extract_entities(
        "agendá una instalación de split en Cabildo 500 mañana a las 10", ctx
    )
    assert (entities.address, entities.time) == ("Cabildo 500", "10:00")
    assert entities.date is not None and entities.service == "instalación de split"
    assert entities.amount is None


def test_a_street_named_like_a_customer_is_the_street() -> None:
    ctx = make_context(Vocabulary(customers=("Juan Thames",)))
    entities = extract_entities("agendá un service en calle Thames 1200", ctx)
    assert entities.address == "Thames 1200"


def test_a_known_customer_before_a_number_is_no_street() -> None:
    ctx = make_context(Vocabulary(customers=("Gómez",)))
    assert extract_entities("facturale a Gómez 1500", ctx).address is None


def test_two_addresses_name_neither(ctx: Context) -> None:
    assert extract_entities("en Cabildo 500 o en Av. Santa Fe 3200", ctx).address is None


def test_the_router_carries_the_address_to_the_booking(router: Router, ctx: Context) -> None:
    understood = router.understand("agendá un service en Cabildo 500 mañana a las 10", ctx)
    assert understood.intents == ["book_job"]
    assert understood.tasks[0].entities.address == "Cabildo 500"
    assert understood.tasks[0].entities.time == "10:00"


@pytest.mark.parametrize(
    "typed", ["Av. Cabildo 500", "Avda Cabildo 500", "Calle Cabildo 500", "Pje. Cabildo 500",
              "Bv. Cabildo 500", "Bvd. Cabildo 500", "Boulevard Cabildo 500",
              "Diagonal Cabildo 500", "Ruta Cabildo 500", "Camino Cabildo 500",
              "Autopista Cabildo 500"],
)  # fmt: skip
def test_every_street_type_the_reader_knows_the_records_compare_without(typed: str) -> None:
    from business.selectors import street_core
    from nlu.addresses import find_addresses

    [found] = find_addresses(f"agendá un service en {typed}")
    assert street_core(found.text) == "cabildo 500"


def test_a_name_at_the_end_of_a_listed_line_is_no_street() -> None:
    """A slot list ("…con Gustavo Medina\n2. sábado…") is no address: an address never runs
    across a line, so the privacy guard sent a customer "[dato reservado]" for technicians."""
    from nlu import privacy

    slots = (
        "Te propongo estos turnos libres:\n1. sábado 28/11 09:00 con Gustavo Medina\n"
        "2. sábado 28/11 10:00 con Hernán Molina\n3. sábado 28/11 11:00 con Diego Fernández"
    )
    assert privacy.find(slots) == []
    assert privacy.find("Queda en\nAv. Cabildo 2150") != []  # one on its own line still counts
