"""Answer phrasing that does not need a turn."""

from __future__ import annotations

import datetime
from zoneinfo import ZoneInfo

from agents.payloads import Slot
from agents.phrasing import free_slot_line

START = datetime.datetime(2026, 11, 24, 10, 0, tzinfo=ZoneInfo("America/Argentina/Buenos_Aires"))


def _slot(*others: str) -> Slot:
    return Slot(
        start=START, end=START + datetime.timedelta(hours=2), technician_id=1,
        technician="Carlos Gómez", technician_zone="Sur", zone_distance=0, also_free=others,
    )  # fmt: skip


def test_a_free_slot_names_who_else_is_free_then() -> None:
    assert free_slot_line(_slot(), "es").endswith("10:00 con Carlos Gómez")
    assert free_slot_line(_slot("Lucía Fernández"), "es").endswith(
        "10:00 con Carlos Gómez (también Lucía Fernández)"
    )
    assert free_slot_line(_slot("Ana", "Bea"), "en").endswith(
        "10:00 with Carlos Gómez (also Ana and Bea)"
    )


def test_a_long_list_of_others_is_counted_after_three() -> None:
    line = free_slot_line(_slot("Ana", "Bea", "Ceci", "Dora", "Eva"), "es")
    assert line.endswith("(también Ana, Bea, Ceci y 2 más)")


def test_the_others_survive_a_round_trip_through_json() -> None:
    slot = _slot("Ana", "Bea")
    assert Slot.from_json(slot.as_json()).also_free == ("Ana", "Bea")
    legacy = {k: v for k, v in slot.as_json().items() if k != "also_free"}
    assert Slot.from_json(legacy).also_free == ()
