"""Likely duplicates before a create: names however they are typed, the same phone, CUIT,
address or plate — within the organisation only."""

from __future__ import annotations

import pytest

from business.duplicates import (
    customer_duplicates,
    names_alike,
    technician_duplicates,
    vehicle_duplicates,
)
from business.models import Address, Organisation
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def org() -> Organisation:
    return factories.make_org()


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("Consorcio Av. Cabildo 2150", "consorcio avenida cabildo 2150"),
        ("Consorcio Av. Cabildo 2150", "Consorsio Cabildo 2150"),
        ("Juan Pérez", "juan peres"),
        ("Juan Pérez", "Pérez, Juan"),
        ("Marta Quiroga", "Mrata Qiroga"),
        ("María González SRL", "Maria Gonzales"),
        ("Juan Pérez", "Juan Carlos Pérez"),
        ("Panadería La Espiga", "Panaderia LaEspiga"),
        ("J. Pérez", "Juan Pérez"),
    ],
)
def test_names_alike_however_they_are_typed(one: str, other: str) -> None:
    assert names_alike(one, other) and names_alike(other, one)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("Consorcio Av. Cabildo 2150", "Consorcio Av. Cabildo 2510"),  # numbers never bend
        ("Juan Pérez", "Juan Gómez"),
        ("Juan Pérez", "Pérez"),  # a lone surname is like too many people
        ("Ana Torres", "Ana Díaz"),
        ("Ana", "Ema"),  # short words take no typo
    ],
)
def test_names_not_alike(one: str, other: str) -> None:
    assert not names_alike(one, other)


def test_a_customer_is_found_by_a_typed_name_phone_cuit_or_address(org: Organisation) -> None:
    juan = factories.make_customer(org, "Juan Pérez", phone="+541145678901")
    company = factories.make_customer(org, "Frío Total SRL", cuit="30-71234567-1")
    building = factories.make_customer(org, "Consorcio Cabildo")
    Address.objects.filter(customer=building).update(street="Av. Cabildo 2150", unit="")

    def found(**described: str) -> list[tuple[int, tuple[str, ...]]]:
        return [(d.record.pk, d.reasons) for d in customer_duplicates(org, **described)]

    assert found(name="juan peres") == [(juan.pk, ("name",))]
    assert found(name="Roberto Díaz", phone="011 4567-8901") == [(juan.pk, ("phone",))]
    assert found(name="Otra Cosa", cuit="30712345671") == [(company.pk, ("cuit",))]
    assert found(name="Administración", street="cabildo 2150") == [(building.pk, ("address",))]
    assert found(name="Administración", street="Cabildo 2150", unit="4 A") == [
        (building.pk, ("address",))
    ]
    # Strongest first: the same phone and name outrank a name alone.
    namesake = factories.make_customer(org, "Juan Peres")
    assert found(name="Juan Pérez", phone="4567-8901") == [
        (juan.pk, ("phone", "name")),
        (namesake.pk, ("name",)),
    ]
    # (a street the factories never write: theirs are "Av. Mitre <counter>")
    assert found(name="Nadie Conocido", phone="11 9999-0000", street="Belgrano 1") == []


def test_a_different_cuit_is_a_different_customer(org: Organisation) -> None:
    factories.make_customer(org, "Frío Total SRL", cuit="30-71234567-1")
    assert customer_duplicates(org, name="Frio Total", cuit="20-12345678-6") == []
    assert len(customer_duplicates(org, name="Frio Total")) == 1


def test_another_unit_or_city_is_another_place(org: Organisation) -> None:
    flat = factories.make_customer(org, "Ana Torres")
    Address.objects.filter(customer=flat).update(street="Cabildo 2150", unit="4°A", city="CABA")
    assert customer_duplicates(org, name="Luis", street="Cabildo 2150", unit="piso 4 dto a")
    assert not customer_duplicates(org, name="Luis", street="Cabildo 2150", unit="5B")
    assert not customer_duplicates(org, name="Luis", street="Cabildo 2150", city="Lanús")


def test_another_organisations_records_never_count(org: Organisation) -> None:
    other = factories.make_org("Otra")
    factories.make_customer(other, "Juan Pérez", phone="+541145678901", cuit="20-12345678-6")
    factories.make_technician(other, "Carlos Gómez", phone="+541155556666")
    factories.make_vehicle(other, "AB123CD")
    assert customer_duplicates(org, name="Juan Pérez", phone="1145678901", cuit="20123456786") == []
    assert technician_duplicates(org, name="Carlos Gómez", phone="1155556666") == []
    assert vehicle_duplicates(org, plate="AB123CD") == []


def test_technicians_by_name_or_phone(org: Organisation) -> None:
    carlos = factories.make_technician(org, "Carlos Gómez", phone="+541155556666")
    retired = factories.make_technician(org, "Lucía Fernández", active=False)
    assert [d.record for d in technician_duplicates(org, name="carlos gomes")] == [carlos]
    assert [(d.record, d.reasons) for d in technician_duplicates(org, phone="11 5555-6666")] == [
        (carlos, ("phone",))
    ]
    # An inactive technician is still the same person: better back than twice.
    assert [d.record for d in technician_duplicates(org, name="Lucia Fernandez")] == [retired]
    assert technician_duplicates(org, name="Pedro Ruiz") == []


def test_vehicles_by_plate_however_it_is_written(org: Organisation) -> None:
    van = factories.make_vehicle(org, "AB 123 CD")
    assert [d.record for d in vehicle_duplicates(org, plate="ab-123-cd")] == [van]
    assert [d.record for d in vehicle_duplicates(org, plate="AB123CD")] == [van]
    assert vehicle_duplicates(org, plate="AB123CE") == []
