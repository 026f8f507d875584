"""Dialogue acts and reference through the real turn (issue 24.4, 24.5), on the demo.

The same harness as tests/copilot/test_chains_e2e.py (the real graph, router, handlers and tools
over `manage.py load_demo`, restored before every test). Each test quotes a message the issue
saw go wrong:

- a question never writes: "que vehiculos tenemos disponibles mañana?" after discussing a
  customer asks which reading was meant, and the answer runs that reading;
- a vague statement asks, and opens no ticket;
- "necesito algo para mañana" gets one question, not the out-of-scope list;
- organisation-wide questions are not narrowed to the customer under discussion, and the
  conversation still remembers that customer afterwards;
- a correction right after a booking moves that job, never books a second one;
- a choice among the slots just offered books that slot.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest

from copilot.models import Conversation
from tests.copilot.test_intents_e2e import (
    Demo,
    DemoDatabase,
    Diff,
    Records,
    Turn,
    ask,
    bookable_hour,
    es_day,
    new_conversation,
    open_demo_database,
    pristine_demo,
)

CUSTOMER = "Graciela Ibarra"
READINGS_ES = "No estoy seguro de qué necesitás, así que todavía no hice nada."


@pytest.fixture(scope="module")
def demo_database(django_db_setup: None, django_db_blocker: Any) -> Iterator[DemoDatabase]:
    yield from open_demo_database(django_db_blocker)


@pytest.fixture(autouse=True)
def fresh_routers() -> None:
    """One trained router for the module (see test_intents_e2e.fresh_routers)."""


@pytest.fixture
def demo(demo_database: DemoDatabase) -> Demo:
    return pristine_demo(demo_database, {})


def turn_of(demo: Demo, conversation: Conversation, text: str) -> tuple[Turn, Diff]:
    before = Records.of(demo.org)
    turn = ask(demo, conversation, text)
    return turn, Diff(before, Records.of(demo.org))


def discussing(demo: Demo) -> Conversation:
    """A conversation about one customer (the subject later questions must not be narrowed to)."""
    conversation = new_conversation(demo)
    turn = ask(demo, conversation, f"mostrame la ficha de {CUSTOMER}")
    conversation.refresh_from_db()
    assert turn.intents == ["search_customer"]
    assert conversation.state["customer_label"] == CUSTOMER
    return conversation


def test_a_question_about_free_vehicles_assigns_none_and_asks_which_reading(demo: Demo) -> None:
    conversation = discussing(demo)

    asked, diff = turn_of(demo, conversation, "que vehiculos tenemos disponibles mañana?")

    diff.assert_unchanged()
    assert asked.reply.startswith(READINGS_ES)
    assert "1. asignar el vehículo" in asked.reply and "2. ver la disponibilidad" in asked.reply
    assert asked.trace["steps"][0]["source"] == "doubt"

    answered, after = turn_of(demo, conversation, "el segundo")

    after.assert_unchanged()
    assert answered.intents == ["check_availability"]
    assert "turnos libres" in answered.reply


def test_a_vague_statement_asks_and_opens_no_ticket(demo: Demo) -> None:
    conversation = new_conversation(demo)

    turn, diff = turn_of(
        demo, conversation, "mmm fijate lo del otro dia con el tema ese del equipo"
    )

    diff.assert_unchanged()
    assert not diff.new_tickets
    assert turn.reply.startswith(READINGS_ES)


def test_a_vague_domain_request_gets_a_question_not_the_out_of_scope_list(demo: Demo) -> None:
    conversation = new_conversation(demo)

    turn, diff = turn_of(demo, conversation, "necesito algo para mañana")

    diff.assert_unchanged()
    assert turn.reply.startswith(READINGS_ES)
    assert "agendar el trabajo" in turn.reply and "fuera de lo que puedo hacer" not in turn.reply


@pytest.mark.parametrize(
    ("text", "owes"),
    [("quien nos debe plata?", "Te deben"), ("Who has overdue invoices?", "You are owed")],
)
def test_who_owes_us_is_answered_for_the_whole_organisation(
    demo: Demo, text: str, owes: str
) -> None:
    conversation = discussing(demo)

    turn, diff = turn_of(demo, conversation, text)

    diff.assert_unchanged()
    assert turn.intents == ["payment_status"]
    assert turn.reply.startswith(owes)
    assert turn.reply.count("\n- ") > 1  # debtors, not one customer's invoices
    conversation.refresh_from_db()
    assert conversation.state["customer_label"] == CUSTOMER  # still the subject afterwards


def test_a_question_that_points_at_the_customer_stays_with_her(demo: Demo) -> None:
    conversation = discussing(demo)

    turn, _ = turn_of(demo, conversation, "¿y ella cuánto nos debe?")

    assert turn.intents == ["payment_status"]
    assert CUSTOMER in turn.reply and "Te deben" not in turn.reply


def _two_days(demo: Demo) -> tuple[datetime.date, int, datetime.date, int]:
    first, second = demo.working_days(2, 2)
    return first, bookable_hour(demo, first, "ac"), second, bookable_hour(demo, second, "ac")


@pytest.mark.parametrize(
    "correction", ["dale el {day} a las {hour}", "no, mejor el {day} a las {hour}"]
)
def test_a_correction_right_after_a_booking_moves_that_job(demo: Demo, correction: str) -> None:
    first, first_hour, second, second_hour = _two_days(demo)
    conversation = new_conversation(demo)
    booking = f"agendale a {CUSTOMER} un service de split el {es_day(first)} a las {first_hour}"
    booked, made = turn_of(demo, conversation, booking)
    [job] = made.new_jobs
    assert booked.intents == ["book_job"]

    text = correction.format(day=es_day(second), hour=second_hour)
    moved, diff = turn_of(demo, conversation, text)

    assert moved.intents == ["reschedule"]
    assert not diff.new_jobs and diff.changed_jobs == {job.pk}
    job.refresh_from_db()
    assert demo.local(job.scheduled_start) == demo.at(second, second_hour)
    diff.assert_unchanged(but=("jobs",))


def test_a_choice_among_the_offered_slots_books_that_slot(demo: Demo) -> None:
    day = demo.working_days(3, 1)[0]
    conversation = discussing(demo)
    offered, _ = turn_of(
        demo, conversation, f"que turnos hay el {es_day(day)} para un service de split?"
    )
    assert offered.intents == ["check_availability"]
    second = offered.reply.split("\n2. ", 1)[1].split("\n", 1)[0]  # "jueves 03/12 10:00 con …"
    clock = next(word for word in second.split() if ":" in word)

    picked, diff = turn_of(demo, conversation, "el segundo")

    assert picked.intents == ["book_job"]
    [job] = diff.new_jobs
    assert job.customer.name == CUSTOMER
    hour, minute = (int(part) for part in clock.split(":"))
    assert demo.local(job.scheduled_start) == demo.at(day, hour, minute)
    assert job.technician is not None and job.technician.name in second
    diff.assert_unchanged(but=("jobs",))
