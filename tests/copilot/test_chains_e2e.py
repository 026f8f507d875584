"""Multi-intent chains and follow-up turns on the demo organisation, end to end.

The same harness as tests/copilot/test_intents_e2e.py (the real graph, router, handlers and tools
over `manage.py load_demo`, the pristine demo restored before every test). Here a message asks
for several things, or leans on the previous turn:

- a customer registered and booked in one message: the job belongs to the new customer (the
  create step's context mutation reaches the booking);
- chains whose text order is reversed by their dependencies (book before invoicing the job, the
  absence before moving that technician's jobs);
- a partial success: one step fails and the reply says what was done and what was not;
- "pasalo al viernes a la misma hora" after a booking moves that same job;
- another organisation with a customer of the same name never shows up, and its records never
  change.
"""

from __future__ import annotations

import datetime
import json
import re
from typing import Any

import pytest

from approvals.models import PendingAction
from business.models import Customer, Invoice, Job, Organisation
from business.scheduling import active_technicians, technicians_free
from business.validators import format_phone
from copilot.orchestration.replies import intent_phrase
from tests import factories
from tests.copilot.demo_harness import (
    Demo,
    DemoDatabase,
    Diff,
    Records,
    Turn,
    absence_facts,
    ask,
    assert_event_order,
    assert_held,
    assert_language,
    assert_routed,
    bookable_hour,
    can_move,
    clock_en,
    comparable,
    current_demo,
    en_day,
    es_day,
    new_conversation,
    shipped_examples,
)

pytestmark = pytest.mark.one_router  # one trained router for the module (tests/copilot/conftest.py)

HOURS = (10, 14, 11, 15, 9)
# A booking is checked for this long a free stretch (the longest service in these messages).
LENGTH = datetime.timedelta(minutes=120)


def _free(demo: Demo, day: datetime.date, hour: int, skill: str) -> list[Any]:
    start = demo.at(day, hour)
    return technicians_free(demo.org, start, start + LENGTH, skill)


def _follow_up_plan(demo: Demo, day: datetime.date) -> tuple[datetime.date, int, str]:
    """(the day a booked job moves to, the hour, an AC technician free at that hour on both
    days): "pasalo al <día> a la misma hora" names a weekday of this week, so it is one of the
    next six days."""
    later = [
        d for d in demo.working_days(1, 6)
        if day < d <= demo.today + datetime.timedelta(days=6)
    ]  # fmt: skip
    for target in reversed(later):
        for hour in HOURS:
            for technician in active_technicians(demo.org, "ac"):
                both = _free(demo, day, hour, "ac"), _free(demo, target, hour, "ac")
                if all(technician in free for free in both):
                    return target, hour, technician.name
    raise AssertionError("no AC technician is free at the same hour on two days this week")


def _chain_facts(demo: Demo) -> dict[str, Any]:
    day_a, day_b, day_c = demo.working_days(2, 3)
    facts: dict[str, Any] = {"day_a": day_a, "day_b": day_b, "day_c": day_c}
    facts["new_hour"] = bookable_hour(demo, day_c, "ac")
    facts["boiler_hour"] = bookable_hour(demo, day_b, "heating")
    facts["split_hour"] = bookable_hour(demo, day_a, "ac")
    facts["follow_up"] = _follow_up_plan(demo, day_a)
    facts.update(absence_facts(demo))
    facts["sick_to"] = _sick_move_target(demo, facts["sick_es"], facts["sick_day"])
    return facts


def _sick_move_target(demo: Demo, name: str, day: datetime.date) -> datetime.date:
    """A later working day some of the absent technician's jobs that day can move to."""
    jobs = demo.open_jobs().filter(
        technician__name=name, scheduled_start__range=(demo.at(day, 0), demo.at(day, 23, 59))
    )
    for target in demo.working_days(2, 6):
        if target > day and can_move(demo, jobs, target):
            return target
    raise AssertionError(f"{name}'s jobs of {day} cannot move to any day of the coming week")


@pytest.fixture(scope="module")
def demo_facts(demo_database: DemoDatabase, django_db_blocker: Any) -> dict[str, Any]:
    with django_db_blocker.unblock():
        return _chain_facts(current_demo())


def _words(demo: Demo) -> dict[str, str]:
    facts = demo.facts
    words = {}
    for key in ("day_a", "day_b", "day_c", "sick_day", "sick_to"):
        words[f"{key}_es"], words[f"{key}_en"] = es_day(facts[key]), en_day(facts[key])
    for key in ("new_hour", "boiler_hour", "split_hour"):
        words[f"{key}_es"], words[f"{key}_en"] = str(facts[key]), clock_en(facts[key])
    target, hour, technician = facts["follow_up"]
    words.update(
        follow_tech=technician, follow_hour_es=str(hour), follow_hour_en=clock_en(hour),
        follow_to_es=es_day(target).split()[0], follow_to_en=en_day(target).split()[0],
        sick_tech=facts["sick_es"],
    )  # fmt: skip
    return words


def turn_of(demo: Demo, template: str, conversation: Any = None) -> tuple[Turn, Diff]:
    conversation = conversation or new_conversation(demo)
    before = Records.of(demo.org)
    turn = ask(demo, conversation, template.format(**_words(demo)))
    return turn, Diff(before, Records.of(demo.org))


def _checked(turn: Turn, language: str, demo: Demo) -> None:
    assert turn.result.language == language
    assert_language(turn.reply, language, demo.org)
    assert_event_order(turn)


def _mutations(turn: Turn) -> list[tuple[str, int]]:
    return [(m["kind"], m["id"]) for m in turn.trace["mutations"]]


# --- create_customer → book_job: the job is the new customer's ----------------------------------


NEW_CUSTOMER = [
    pytest.param(
        "es",
        "Registrá a Rocío Almada con tel 11 5566-7788, vive en Av. Cabildo 3500, CABA, y "
        "agendale un service de split para el {day_c_es} a las {new_hour_es}",
        "Rocío Almada", "1155667788", id="es",
    ),
    pytest.param(
        "en",
        "Register Martin Whitfield, phone 11 4422-1188, address Av. Santa Fe 2100, CABA, and "
        "book him a split service on {day_c_en} at {new_hour_en}",
        "Martin Whitfield", "1144221188", id="en",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("language", "template", "name", "phone"), NEW_CUSTOMER)
def test_a_new_customer_is_registered_then_booked(
    demo: Demo, language: str, template: str, name: str, phone: str
) -> None:
    turn, diff = turn_of(demo, template)

    assert_routed(turn, ["create_customer", "book_job"])
    _checked(turn, language, demo)
    [customer] = diff.new_customers
    [job] = diff.new_jobs
    assert customer.name == name and phone in re.sub(r"\D", "", customer.phone)
    # The booking step used the customer the first step created (its context mutation).
    assert job.customer == customer
    assert job.address is not None and job.address.customer == customer
    assert demo.local(job.scheduled_start) == demo.at(demo.facts["day_c"], demo.facts["new_hour"])
    assert _mutations(turn) == [("customer", customer.pk), ("job", job.pk)]
    assert f"#{customer.pk}" in turn.reply and f"#{job.pk}" in turn.reply
    diff.assert_unchanged(but=("customers", "jobs"))
    assert not diff.changed_jobs and not diff.changed_customers


# --- dependencies reorder the text ---------------------------------------------------------------

REVERSED_INVOICE = [
    pytest.param(
        "es",
        "Facturale a Héctor Rossi el service de caldera, pero antes agendáselo para el {day_b_es} "
        "a las {boiler_hour_es}",
        id="es",
    ),
    pytest.param(
        "en",
        "Invoice Héctor Rossi for a boiler service, but book it first for {day_b_en} at "
        "{boiler_hour_en}",
        id="en",
    ),
    pytest.param(
        "es",
        "Hacele la factura a Héctor Rossi después de agendarle un service de caldera el "
        "{day_b_es} a las {boiler_hour_es}",
        id="es-despues-de-agendarle",
    ),
    pytest.param(
        "en",
        "Invoice Héctor Rossi for the boiler service once you book it for {day_b_en} at "
        "{boiler_hour_en}",
        id="en-once-you-book-it",
    ),
]


@pytest.mark.parametrize(("language", "template"), REVERSED_INVOICE)
def test_booking_comes_before_invoicing_it_whatever_the_text_order(
    demo: Demo, language: str, template: str
) -> None:
    turn, diff = turn_of(demo, template)

    assert_routed(turn, ["book_job", "generate_invoice"])
    _checked(turn, language, demo)
    [job] = diff.new_jobs
    assert job.customer.name == "Héctor Rossi"
    assert demo.local(job.scheduled_start) == demo.at(
        demo.facts["day_b"], demo.facts["boiler_hour"]
    )
    # The invoice waits for a manager, for the job the first step booked.
    [action] = diff.held
    assert (action.tool, action.arguments["job_id"]) == ("invoice_create", job.pk)
    assert not Invoice.objects.filter(job=job).exists()
    assert f"#{job.pk}" in turn.reply and f"#{action.pk}" in turn.reply
    diff.assert_unchanged(but=("jobs", "pending"))
    assert not diff.changed_jobs


SICK_THEN_MOVE = [
    pytest.param(
        "es",
        "Pasá todos los trabajos de {sick_tech} al {sick_to_es}, el {sick_day_es} no viene porque "
        "está enfermo",
        id="es",
    ),
    pytest.param(
        "en",
        "Move all of {sick_tech}'s jobs to {sick_to_en}, he is off sick on {sick_day_en}",
        id="en",
    ),
    pytest.param(
        "es",
        "Pasá los trabajos de {sick_tech} al {sick_to_es}, el {sick_day_es} no viene porque está "
        "enfermo",
        id="es-sin-todos",
    ),
]


@pytest.mark.parametrize(("language", "template"), SICK_THEN_MOVE)
def test_the_absence_comes_before_moving_that_technicians_jobs(
    demo: Demo, language: str, template: str
) -> None:
    technician = demo.technician(demo.facts["sick_es"])
    day, target = demo.facts["sick_day"], demo.facts["sick_to"]
    affected = set(
        demo.open_jobs()
        .filter(
            technician=technician,
            scheduled_start__range=(demo.at(day, 0), demo.at(day, 23, 59)),
        )
        .values_list("pk", flat=True)
    )

    turn, diff = turn_of(demo, template)

    assert_routed(turn, ["technician_sick", "bulk_reschedule"])
    _checked(turn, language, demo)
    held = assert_held(turn, diff, [action.tool for action in diff.held])
    tools = [action.tool for action in held]
    assert tools[0] == "technician_absence_record" and tools[-1] == "jobs_bulk_reschedule"
    absence, move = held[0].arguments, held[-1].arguments
    assert (absence["technician_id"], absence["start_date"]) == (technician.pk, day.isoformat())
    # The move is about the jobs the absence affects (the first step's context mutation).
    assert set(move["job_ids"]) == affected
    assert move["to_date"] == target.isoformat()


TOMORROW = "Move all of {sick_tech}'s jobs to {sick_to_en}, he called in sick for tomorrow"


def test_a_sick_day_said_as_tomorrow_is_recorded_for_tomorrow(demo: Demo) -> None:
    tomorrow = demo.today + datetime.timedelta(days=1)

    turn, diff = turn_of(demo, TOMORROW)

    assert turn.intents == ["technician_sick", "bulk_reschedule"]
    [record] = [action for action in diff.held if action.tool == "technician_absence_record"]
    assert record.arguments["start_date"] == tomorrow.isoformat()
    diff.assert_unchanged(but=("pending",))


# --- partial success -----------------------------------------------------------------------------

PARTIAL = [
    pytest.param(
        "es",
        "Agendale a Graciela Ibarra un service de split el {day_a_es} a las {split_hour_es} y "
        "pasame la ficha de Ernesto Zapata",
        ["book_job", "search_customer"],
        "Ernesto Zapata",
        id="es",
    ),
    pytest.param(
        "en",
        "Book Graciela Ibarra a split service on {day_a_en} at {split_hour_en} and pull up Ernest "
        "Zapata's file",
        ["book_job", "search_customer"],
        "Ernest Zapata",
        id="en",
    ),
    pytest.param(
        "es",
        "Agendale a Graciela Ibarra un service de split el {day_a_es} a las {split_hour_es} y "
        "agendale también a Ernesto Zapata una carga de gas el {day_b_es} a las 10",
        ["book_job", "book_job"],
        "Ernesto Zapata",
        id="es-two-bookings",
    ),
    pytest.param(
        "en",
        "Book Graciela Ibarra a split service on {day_a_en} at {split_hour_en}, and book Ernest "
        "Zapata a gas recharge on {day_b_en} at 10am",
        ["book_job", "book_job"],
        "Ernest Zapata",
        id="en-two-bookings",
    ),
]


@pytest.mark.parametrize(("language", "template", "chain", "unknown"), PARTIAL)
def test_a_partial_success_says_what_was_done_and_what_was_not(
    demo: Demo, language: str, template: str, chain: list[str], unknown: str
) -> None:
    turn, diff = turn_of(demo, template)

    assert turn.intents == chain, turn.reply
    done, failed = turn.runs
    assert done.success and not failed.success and not failed.yielded
    assert "not found" in failed.error
    _checked(turn, language, demo)
    [job] = diff.new_jobs
    assert job.customer.name == "Graciela Ibarra"
    assert demo.local(job.scheduled_start) == demo.at(demo.facts["day_a"], demo.facts["split_hour"])
    assert f"#{job.pk}" in turn.reply and unknown in turn.reply
    done_word, not_done_word = ("Hecho", "Sin hacer") if language == "es" else ("Done", "Not done")
    summary = turn.reply.split("\n\n")[-1]
    assert f"{done_word}: {intent_phrase(chain[0], language)}" in summary
    assert f"{not_done_word}: {intent_phrase(chain[1], language)}" in summary
    diff.assert_unchanged(but=("jobs",))
    assert not diff.changed_jobs
    assert not Customer.objects.filter(organisation=demo.org, name__icontains="Zapata").exists()


# --- a follow-up turn continues the same job ----------------------------------------------------


FOLLOW_UP = [
    pytest.param(
        "es",
        "Agendale a Graciela Ibarra un service de split el {day_a_es} a las {follow_hour_es} con "
        "{follow_tech}",
        "pasalo al {follow_to_es} a la misma hora",
        id="es",
    ),
    pytest.param(
        "en",
        "Book Héctor Rossi a split service on {day_a_en} at {follow_hour_en} with {follow_tech}",
        "move it to {follow_to_en}, same time",
        id="en",
    ),
]


@pytest.mark.parametrize(("language", "booking", "follow_up"), FOLLOW_UP)
def test_a_follow_up_turn_moves_the_job_just_booked(
    demo: Demo, language: str, booking: str, follow_up: str
) -> None:
    target, hour, technician = demo.facts["follow_up"]
    conversation = new_conversation(demo)
    first, booked = turn_of(demo, booking, conversation)
    assert_routed(first, ["book_job"])
    _checked(first, language, demo)
    [job] = booked.new_jobs
    assert demo.local(job.scheduled_start) == demo.at(demo.facts["day_a"], hour)

    second, diff = turn_of(demo, follow_up, conversation)

    assert_routed(second, ["reschedule"])
    _checked(second, language, demo)
    job.refresh_from_db()
    assert diff.changed_jobs == {job.pk} and not diff.new_jobs
    assert demo.local(job.scheduled_start) == demo.at(target, hour)
    assert job.technician is not None and job.technician.name == technician
    assert f"#{job.pk}" in second.reply
    diff.assert_unchanged(but=("jobs",))


# --- another organisation never shows up --------------------------------------------------------

OUTSIDER_PHONE = "+54 9 11 7000-4321"
OUTSIDER_STREET = "Calle Falsa 742"
OUTSIDER_ONLY = "Ernesto Zapata"
OUTSIDER_TECHNICIAN = "Ramón Quiroga"


def _outsider(demo: Demo) -> Organisation:
    """Another company with a customer named like one of the demo's, a customer the demo does
    not have, a technician, two jobs on the day the demo books and an unpaid invoice."""
    other = factories.make_org("Frío Norte", slug="frio-norte")
    namesake = Customer.objects.create(
        organisation=other, name="Graciela Ibarra", phone=OUTSIDER_PHONE,
        email="graciela@frionorte.example",
    )  # fmt: skip
    namesake.addresses.create(organisation=other, street=OUTSIDER_STREET, city="CABA", zone="CABA")
    only = factories.make_customer(other, OUTSIDER_ONLY, phone="+54 9 11 7000-9999", zone="CABA")
    technician = factories.make_technician(other, OUTSIDER_TECHNICIAN, skills=["ac"], zone="CABA")
    start = demo.at(demo.facts["day_a"], 9)
    factories.make_job(other, namesake, start, technician=technician, service="Service de split")
    factories.make_job(other, only, start + datetime.timedelta(hours=3), technician=technician)
    factories.make_invoice(other, namesake, number="0009-00000042")
    return other


OUTSIDER_MARKS = (OUTSIDER_PHONE, "7000-4321", OUTSIDER_STREET, "frionorte", OUTSIDER_TECHNICIAN,
                  "7000-9999", "0009-00000042", "Frío Norte")  # fmt: skip


OUTSIDER_MESSAGES = [
    "Pasame la ficha de Graciela Ibarra",
    "¿Cuánto nos debe Graciela Ibarra?",
    "Buscame a Ernesto Zapata",
    "¿Quién está libre el {day_a_es} a las 9 para un service de split?",
    "Agendale a Graciela Ibarra un service de split el {day_a_es} a las {split_hour_es}",
    "Has Graciela Ibarra paid everything?",
]


def test_another_organisations_records_never_appear_or_change(demo: Demo) -> None:
    other = _outsider(demo)
    theirs = Records.of(other)
    ours = demo.customer("Graciela Ibarra")
    conversation = new_conversation(demo)

    turns = [turn_of(demo, message, conversation) for message in OUTSIDER_MESSAGES]

    for turn, _diff in turns:
        seen = json.dumps(turn.events, ensure_ascii=False) + json.dumps(turn.trace)
        leaked = [mark for mark in OUTSIDER_MARKS if mark in seen]
        assert not leaked, f"{turn.text!r} showed {leaked}: {turn.reply}"
    search, owed, unknown, free, booking, paid = (turn for turn, _ in turns)
    assert format_phone(ours.phone) in search.reply
    assert owed.reply.startswith("Graciela Ibarra") and paid.reply.startswith("Graciela Ibarra")
    assert unknown.intents == ["search_customer"] and not unknown.runs[0].success
    assert OUTSIDER_ONLY in unknown.reply  # said as not found, with nothing of theirs
    assert free.intents == ["check_availability"]
    [job] = turns[4][1].new_jobs
    assert job.customer == ours and job.organisation == demo.org
    assert booking.intents == ["book_job"]
    # Nothing of theirs changed, and nothing of ours reached them.
    assert Records.of(other) == theirs
    assert not PendingAction.objects.filter(organisation=other).exists()
    assert not Job.objects.filter(organisation=other, customer__organisation=demo.org).exists()


def test_no_message_is_copied_from_the_shipped_examples(demo: Demo) -> None:
    shipped = shipped_examples()
    templates = [
        *(p.values[1] for p in [*NEW_CUSTOMER, *REVERSED_INVOICE, *SICK_THEN_MOVE, *PARTIAL]),
        *(text for p in FOLLOW_UP for text in p.values[1:]),
        *OUTSIDER_MESSAGES,
        TOMORROW,
    ]
    texts = [str(template).format(**_words(demo)) for template in templates]
    assert not [text for text in texts if comparable(text) in shipped]
