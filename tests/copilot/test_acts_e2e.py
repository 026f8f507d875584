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
import re
from collections.abc import Iterator

import pytest

from agents.models import AgentIntent
from business.models import Invoice
from business.scheduling import technicians_free
from copilot.models import Conversation
from copilot.router_cache import registry_changed
from tests.copilot.demo_harness import (
    Demo,
    Diff,
    Records,
    Turn,
    ask,
    bookable_hour,
    es_day,
    new_conversation,
)

pytestmark = pytest.mark.one_router  # one trained router for the module (tests/copilot/conftest.py)

CUSTOMER = "Graciela Ibarra"
READINGS_ES = "No estoy seguro de qué necesitás, así que todavía no hice nada."


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
    "correction",
    # The last: only a time, the same day (test_graph.py has the reading the corpus-trained
    # classifier gives it: out of scope first).
    ["dale el {day} a las {hour}", "no, mejor el {day} a las {hour}", "mejor a las {hour}"],
)
def test_a_correction_right_after_a_booking_moves_that_job(demo: Demo, correction: str) -> None:
    first, first_hour, second, second_hour = _two_days(demo)
    conversation = new_conversation(demo)
    booking = f"agendale a {CUSTOMER} un service de split el {es_day(first)} a las {first_hour}"
    booked, made = turn_of(demo, conversation, booking)
    [job] = made.new_jobs
    assert booked.intents == ["book_job"]

    if "{day}" not in correction:  # the same day, another hour: a move, whether or not it fits
        hour = first_hour + 2 if first_hour <= 14 else first_hour - 3
        moved, diff = turn_of(demo, conversation, correction.format(hour=hour))
        assert moved.intents == ["reschedule"], moved.reply
        assert not diff.new_jobs and diff.changed_jobs <= {job.pk}
        assert f"#{job.pk}" in moved.reply
        return
    moved, diff = turn_of(
        demo, conversation, correction.format(day=es_day(second), hour=second_hour)
    )

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


def test_a_choice_that_names_another_technician_books_that_slot_with_them(demo: Demo) -> None:
    """ "dale, el de las 11 con Lucas" when the 11:00 line offered someone else: the time comes
    from the list, the person from the reply (it booked the listed technician instead)."""
    day = demo.working_days(3, 1)[0]
    conversation = discussing(demo)
    offered, _ = turn_of(
        demo, conversation, f"que turnos hay el {es_day(day)} para un service de split?"
    )
    lines = [line for line in offered.reply.splitlines() if re.match(r"\d+\. ", line)]
    for line in lines:
        hour = int(re.search(r"(\d\d):00", line).group(1))  # type: ignore[union-attr]
        start = demo.at(day, hour)
        others = [
            tech
            for tech in technicians_free(demo.org, start, start + datetime.timedelta(hours=2), "ac")
            if tech.name not in line
        ]
        if others:
            break
    else:
        raise AssertionError("every listed hour has only its listed technician free")
    named = others[0]

    picked, diff = turn_of(
        demo, conversation, f"dale, el de las {hour} con {named.name.split()[0]}"
    )

    assert picked.intents == ["book_job"]
    [job] = diff.new_jobs
    assert job.technician == named
    assert demo.local(job.scheduled_start) == demo.at(day, hour)


@pytest.fixture
def edits(demo: Demo) -> Iterator[Demo]:
    """The test edits the demo's registry: the next test reads the restored one afresh."""
    yield demo
    registry_changed(demo.org.pk)


def _registry_says(demo: Demo, intent: str, **fields: str) -> None:
    """An admin's edit of one intent of the demo's registry (the router retrains on it)."""
    assert AgentIntent.objects.filter(agent__organisation=demo.org, name=intent).update(**fields)
    registry_changed(demo.org.pk)  # what saving in the admin signals


@pytest.mark.usefixtures("edits")
def test_without_the_registrys_correction_a_new_day_right_after_a_booking_moves_nothing(
    demo: Demo,
) -> None:
    _registry_says(demo, "book_job", corrected_by="")
    first, first_hour, second, second_hour = _two_days(demo)
    conversation = new_conversation(demo)
    booking = f"agendale a {CUSTOMER} un service de split el {es_day(first)} a las {first_hour}"
    _, made = turn_of(demo, conversation, booking)
    [job] = made.new_jobs

    moved, diff = turn_of(demo, conversation, f"dale el {es_day(second)} a las {second_hour}")

    assert moved.intents != ["reschedule"]
    assert job.pk not in diff.changed_jobs


@pytest.mark.usefixtures("edits")
def test_without_the_registrys_pick_a_choice_among_slots_books_nothing(demo: Demo) -> None:
    _registry_says(demo, "check_availability", picked_as="")
    day = demo.working_days(3, 1)[0]
    conversation = discussing(demo)
    offered, _ = turn_of(
        demo, conversation, f"que turnos hay el {es_day(day)} para un service de split?"
    )
    assert offered.intents == ["check_availability"]

    picked, diff = turn_of(demo, conversation, "el segundo")

    assert picked.trace.get("routed_by") != "choice"
    assert not diff.new_jobs


def test_the_latest_invoice_of_a_customer_is_shown_not_made(demo: Demo) -> None:
    newest = (
        Invoice.objects.filter(organisation=demo.org, customer__name=CUSTOMER)
        .exclude(status=Invoice.Status.DRAFT)
        .latest("issued_on", "pk")
    )
    conversation = new_conversation(demo)

    turn, diff = turn_of(demo, conversation, f"mandame la factura de {CUSTOMER}, la ultima")

    diff.assert_unchanged()
    assert turn.intents == ["payment_status"]
    assert newest.number in turn.reply
    assert f"PDF: /invoices/{newest.pk}/pdf/" in turn.reply


@pytest.mark.usefixtures("edits")
def test_without_the_registrys_existing_form_that_message_proposes_an_invoice(demo: Demo) -> None:
    _registry_says(demo, "generate_invoice", existing_as="")
    conversation = new_conversation(demo)

    turn, _ = turn_of(demo, conversation, f"mandame la factura de {CUSTOMER}, la ultima")

    assert turn.intents == ["generate_invoice"]
