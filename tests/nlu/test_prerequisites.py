"""Prerequisites stated as facts become steps of their own, before what builds on them."""

from __future__ import annotations

import pytest

from nlu.prerequisites import add_stated
from nlu.values import Task


def _chain(intent: str, text: str) -> list[str]:
    tasks, _added = add_stated([Task(intent, "", 0.9, text)], text)
    return [task.intent for task in tasks]


@pytest.mark.parametrize(
    "text",
    [
        "Mové los trabajos de Diego al jueves, está enfermo",
        "pasá todo lo de Leandro al viernes que se engripó",
        "Ramiro no viene mañana, repartí sus trabajos",
        "Marta tiene fiebre, movele la agenda al lunes",
        "Move all of Diego's jobs to Thursday, he is off sick on Wednesday",
        "Mike called in sick, push his jobs to Friday",
        "Tom has the flu, reschedule everything he had today",
    ],
)
def test_an_absence_stated_as_a_fact_records_it_before_moving_the_jobs(text: str) -> None:
    assert _chain("bulk_reschedule", text) == ["technician_sick", "bulk_reschedule"]


@pytest.mark.parametrize(
    "text",
    [
        "agendale una visita a Rosa Díaz mañana 10hs, es clienta nueva",
        "Book Anna Smith for Friday 9am, she's a new customer",
        "reservá un turno para los Gómez, todavía no están registrados",
    ],
)
def test_a_new_customer_stated_as_a_fact_is_registered_before_the_booking(text: str) -> None:
    assert _chain("book_job", text) == ["create_customer", "book_job"]


@pytest.mark.parametrize(
    ("intent", "text"),
    [
        ("bulk_reschedule", "mové los trabajos del viernes al lunes"),
        ("bulk_reschedule", "Move everything from Friday to Monday, the client is not in a rush"),
        ("book_job", "agendale una visita a Rosa Díaz mañana 10hs"),
        ("book_job", "agendá a Pérez, el mismo cliente de siempre"),
        ("search_customer", "buscame a Diego, está enfermo?"),  # nothing builds on it
    ],
)
def test_nothing_is_added_when_the_message_states_no_such_fact(intent: str, text: str) -> None:
    assert _chain(intent, text) == [intent]


def test_a_prerequisite_already_in_the_chain_is_not_added_twice() -> None:
    text = "Diego está enfermo, mové sus trabajos al jueves"
    tasks = [Task("technician_sick", "", 0.9, "Diego está enfermo"),
             Task("bulk_reschedule", "", 0.9, "mové sus trabajos al jueves")]  # fmt: skip
    kept, added = add_stated(tasks, text)
    assert [t.intent for t in kept] == ["technician_sick", "bulk_reschedule"] and added == []
