"""Clarification in the embedded engine (O8): a step that cannot go on asks, and says which
detail it lacks (`Outcome.clarify`); the answer to a listed choice resumes it; after the
conversation's limit (`best_effort`) it never asks again — a missing detail is stated, a choice
is made (jobs: the soonest still ahead; otherwise the first ranked) and named, open to
correction. «El próximo trabajo» names one job, so it is not a question at all."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import pytest

from agents.base import Chain, Handler, Step
from agents.context import TurnContext
from agents.customer.agent import (
    create_customer,
    search_customer,
    update_customer,
    validate_cuit,
)
from agents.financial.agent import generate_quote, payment_status
from agents.fleet.agent import assign_vehicle, bulk_reschedule, dispatch, technician_sick
from agents.phrasing import answered, slot_of, when
from agents.scheduling.agent import book_job, cancel_job, reschedule
from approvals.models import PendingAction
from business.models import Absence, Customer, Job, Technician, Vehicle
from copilot.orchestration.delegate import execute_step
from copilot.orchestration.state import TurnRun
from copilot.orchestration.streaming import TextStream
from copilot.selectors import consulted_for_turn
from copilot.services import conversation_create
from nlu.values import Entities
from tests import factories
from tests.conftest import Cast
from tests.handlers.conftest import (
    BA,
    MONDAY,
    NOW,
    THURSDAY,
    TUESDAY,
    Desk,
    Shop,
    Turn,
    assert_no_foreign_data,
    at,
)
from tests.handlers.office import Office

pytestmark = pytest.mark.django_db


def _asks(turn: Turn, slot: str) -> None:
    """The step asked, for `slot`, and the question is the reply."""
    clarify = turn.outcome.clarify
    assert clarify is not None, turn.text
    assert clarify.slot == slot
    assert clarify.question == turn.text and "?" in turn.text
    assert not turn.outcome.success


def _states(turn: Turn) -> None:
    """Best effort after the limit: no question, nothing pending."""
    assert turn.outcome.clarify is None, turn.text
    assert "?" not in turn.text and "¿" not in turn.text, turn.text


def _cancel_held(cast: Cast) -> int:
    (action,) = PendingAction.objects.filter(organisation=cast.org, tool="job_cancel")
    return int(action.arguments["job_id"])


# --- a missing detail: asked with its slot, or stated after the limit -----------------------

MISSING: list[tuple[str, Handler, str, str, dict[str, Any], str]] = [
    # (id, handler, intent, agent, step, slot)
    ("book-customer", book_job, "book_job", "scheduling", {"date": TUESDAY, "time": "09:00"},
     "customer"),
    ("reschedule-target", reschedule, "reschedule", "scheduling", {"customer": "Juan Pérez"},
     "date"),
    ("create-name", create_customer, "create_customer", "customer",
     {"text": "registrá un cliente nuevo"}, "name"),
    ("update-email", update_customer, "update_customer", "customer",
     {"text": "cambiale el mail a Juan", "customer": "Juan Pérez"}, "email"),
    ("update-field", update_customer, "update_customer", "customer",
     {"text": "actualizá a Juan", "customer": "Juan Pérez"}, "field"),
    ("validate-cuit", validate_cuit, "validate_cuit", "customer", {"text": "validame un cuit"},
     "cuit"),
    ("search-query", search_customer, "search_customer", "customer", {"text": "buscá"},
     "customer"),
    ("quote-service", generate_quote, "generate_quote", "financial",
     {"text": "haceme un presupuesto para Juan", "customer": "Juan Pérez"}, "service"),
]  # fmt: skip
OFFICE_MISSING: list[tuple[str, Handler, str, str, dict[str, Any], str]] = [
    ("sick-technician", technician_sick, "technician_sick", "fleet",
     {"text": "hoy falta un técnico"}, "technician"),
    ("bulk-target", bulk_reschedule, "bulk_reschedule", "fleet",
     {"text": "mové los trabajos de Carlos", "technician": "Carlos"}, "date"),
    ("vehicle-job", assign_vehicle, "assign_vehicle", "fleet", {"text": "asigná la moto"},
     "job"),
    ("dispatch-job", dispatch, "dispatch", "fleet", {"text": "mandá a alguien"}, "job"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("handler", "intent", "agent", "step", "slot"),
    [case[1:] for case in MISSING],
    ids=[case[0] for case in MISSING],
)
def test_a_missing_detail_is_asked_with_its_slot(
    desk: Desk, shop: Shop, handler: Handler, intent: str, agent: str, step: dict[str, Any],
    slot: str,
) -> None:  # fmt: skip
    turn = desk.run(handler, intent, agent, **step)
    _asks(turn, slot)


@pytest.mark.parametrize(
    ("handler", "intent", "agent", "step", "slot"),
    [case[1:] for case in OFFICE_MISSING],
    ids=[case[0] for case in OFFICE_MISSING],
)
def test_a_missing_detail_of_the_fleet_is_asked_with_its_slot(
    office: Office, shop: Shop, handler: Handler, intent: str, agent: str,
    step: dict[str, Any], slot: str,
) -> None:  # fmt: skip
    turn = office.run(handler, intent, agent, **step)
    _asks(turn, slot)
    assert turn.tools == []


@pytest.mark.parametrize(
    ("handler", "intent", "agent", "step"),
    [case[1:5] for case in MISSING],
    ids=[case[0] for case in MISSING],
)
def test_after_the_limit_a_missing_detail_is_stated_not_asked(
    desk: Desk, shop: Shop, handler: Handler, intent: str, agent: str, step: dict[str, Any]
) -> None:
    turn = desk.run(handler, intent, agent, best_effort=True, **step)
    _states(turn)
    assert not turn.outcome.success and turn.outcome.error
    assert turn.text.startswith("No pude ") and turn.text.endswith("No hice ningún cambio.")


def test_the_statement_names_the_action_and_the_detail_in_both_languages(
    desk: Desk, shop: Shop
) -> None:
    es = desk.run(book_job, "book_job", "scheduling", date=TUESDAY, best_effort=True)
    en = desk.run(book_job, "book_job", "scheduling", date=TUESDAY, best_effort=True,
                  language="en")  # fmt: skip
    assert es.text == (
        "No pude agendar el trabajo: no sé de qué cliente se trata. No hice ningún cambio."
    )
    assert en.text == (
        "I couldn't book the job: I don't know which customer it is. I changed nothing."
    )
    assert not Job.objects.filter(organisation=shop.juan.organisation).exists()


@pytest.mark.parametrize(
    ("error", "slot"),
    [
        ("missing customer", "customer"),
        ("missing value for email", "email"),
        ("missing value for phone_alt", "phone_alt"),
        ("missing target date", "date"),
        ("missing target", "date"),
        ("missing selection", "jobs"),
        ("missing query", "customer"),
        ("missing job", "job"),
        ("missing", "detail"),
    ],
)
def test_the_slot_is_the_detail_the_error_names(error: str, slot: str) -> None:
    assert slot_of(error) == slot


# --- a day not said: the free slots are the question -----------------------------------------


def test_a_booking_without_a_day_asks_for_the_date_with_the_free_slots(
    desk: Desk, shop: Shop
) -> None:
    turn = desk.run(book_job, "book_job", "scheduling", customer="Juan Pérez")
    _asks(turn, "date")
    assert "¿Cuál te sirve?" in turn.text and "1. lunes 23/11" in turn.text


def test_the_answer_to_the_free_slots_books_the_one_chosen(desk: Desk, shop: Shop) -> None:
    asked = desk.run(book_job, "book_job", "scheduling", customer="Juan Pérez")
    second = next(line for line in asked.text.splitlines() if line.startswith("2. "))
    turn = desk.run(
        book_job, "book_job", "scheduling", text="agendale una visita a Juan\nel segundo",
        customer="Juan Pérez", resumed=True,
    )  # fmt: skip
    assert turn.outcome.success, turn.text
    job = Job.objects.get(customer=shop.juan)
    assert second.startswith(f"2. {when(job.scheduled_start.astimezone(BA), 'es')} con ")
    assert job.technician is not None and second.endswith(job.technician.name)


def test_after_the_limit_a_booking_without_a_day_lists_the_slots_without_asking(
    desk: Desk, shop: Shop
) -> None:
    turn = desk.run(book_job, "book_job", "scheduling", customer="Juan Pérez", best_effort=True,
                    language="en")  # fmt: skip
    _states(turn)
    assert turn.text.startswith(
        # The default service is named in the organisation's language.
        "I didn't book Visita técnica for Juan Pérez: you didn't say the day. The next free "
        "slots:\n1. Mon 23 Nov 08:00 with "
    )
    assert not Job.objects.filter(customer=shop.juan).exists()


def test_a_refused_time_offers_slots_and_the_answer_books_one(desk: Desk, shop: Shop) -> None:
    org = shop.juan.organisation
    for tech in (shop.carlos, shop.lucia, shop.pedro):
        factories.make_job(org, shop.maria, at(TUESDAY, 9), hours=3, technician=tech)
    entities: dict[str, Any] = {"customer": "Juan Pérez", "date": TUESDAY, "time": "10:00"}
    asked = desk.run(book_job, "book_job", "scheduling", **entities)
    _asks(asked, "time")
    first = next(line for line in asked.text.splitlines() if line.startswith("1. "))
    turn = desk.run(book_job, "book_job", "scheduling", text="agendá a Juan el martes a las 10\n"
                    "dale, el primero", resumed=True, **entities)  # fmt: skip
    assert turn.outcome.success, turn.text
    job = Job.objects.get(customer=shop.juan)
    assert first.startswith(f"1. {when(job.scheduled_start.astimezone(BA), 'es')} con ")
    stated = desk.run(book_job, "book_job", "scheduling", best_effort=True,
                      **{**entities, "customer": "María González SRL"})  # fmt: skip
    _states(stated)
    assert stated.text.startswith("No pude agendarlo el martes 24/11 10:00.")
    assert not Job.objects.filter(customer=shop.maria, scheduled_start=at(TUESDAY, 10)).exists()


# --- several open jobs ----------------------------------------------------------------------


@pytest.fixture
def juans_jobs(cast: Cast, shop: Shop) -> tuple[Job, Job, Job]:
    """Juan's open jobs: one that began at 06:00 today (before the desk's 07:00), Tuesday's and
    Thursday's."""
    org = cast.org
    started = factories.make_job(org, shop.juan, at(MONDAY, 6), technician=shop.carlos)
    tuesday = factories.make_job(org, shop.juan, at(TUESDAY, 10), technician=shop.carlos)
    thursday = factories.make_job(org, shop.juan, at(THURSDAY, 10), technician=shop.carlos)
    return started, tuesday, thursday


def test_several_open_jobs_are_a_question_about_the_job(
    desk: Desk, shop: Shop, juans_jobs: tuple[Job, Job, Job]
) -> None:
    turn = desk.run(cancel_job, "cancel_job", "scheduling", text="cancelá el trabajo de Juan",
                    customer="Juan Pérez")  # fmt: skip
    _asks(turn, "job_choice")
    assert turn.text.startswith("Hay 3 trabajos abiertos de Juan Pérez:")
    assert not PendingAction.objects.exists()
    assert_no_foreign_data(turn.text)


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Cancelá el próximo trabajo de Juan", "es"),
        ("cancelale la próxima visita a Juan", "es"),
        ("Cancel Juan's next job", "en"),
    ],
)
def test_the_next_job_names_the_soonest_still_ahead(
    desk: Desk, shop: Shop, cast: Cast, juans_jobs: tuple[Job, Job, Job], text: str,
    language: str,
) -> None:  # fmt: skip
    _started, tuesday, _thursday = juans_jobs
    turn = desk.run(cancel_job, "cancel_job", "scheduling", text=text, customer="Juan Pérez",
                    language=language)  # fmt: skip
    assert turn.outcome.clarify is None and turn.outcome.success, turn.text
    assert _cancel_held(cast) == tuesday.pk
    assert f"#{tuesday.pk}" in turn.text
    assert "corrijo" not in turn.text and "correct it" not in turn.text


def test_after_the_limit_the_soonest_job_ahead_is_taken_and_named(
    desk: Desk, shop: Shop, cast: Cast, juans_jobs: tuple[Job, Job, Job]
) -> None:
    _started, tuesday, _thursday = juans_jobs
    turn = desk.run(cancel_job, "cancel_job", "scheduling", text="cancelá el trabajo de Juan",
                    customer="Juan Pérez", best_effort=True)  # fmt: skip
    _states(turn)
    assert _cancel_held(cast) == tuesday.pk
    assert turn.text.endswith(
        f"Había 3 trabajos abiertos de Juan Pérez: tomé el más próximo, #{tuesday.pk} Service de "
        "aire acondicionado — Juan Pérez, martes 24/11 10:00, con Carlos Gómez. Si era otro, "
        "decime cuál y lo corrijo."
    )


def test_after_the_limit_a_move_takes_the_soonest_job_in_english(
    desk: Desk, shop: Shop, juans_jobs: tuple[Job, Job, Job]
) -> None:
    _started, tuesday, _thursday = juans_jobs
    turn = desk.run(reschedule, "reschedule", "scheduling", text="move Juan's job to Friday 9",
                    customer="Juan Pérez", date=THURSDAY.replace(day=27), time="09:00",
                    language="en", best_effort=True)  # fmt: skip
    _states(turn)
    tuesday.refresh_from_db()
    assert tuesday.scheduled_start == at(THURSDAY.replace(day=27), 9)
    assert "I took the soonest, " in turn.text and "tell me which and I'll correct it." in (
        turn.text
    )


@pytest.mark.parametrize(
    "answer", ["el del jueves", "#{thursday}", "el tercero", "el último", "3", "{thursday}"]
)
def test_the_answer_to_the_list_of_jobs_picks_one(
    desk: Desk, shop: Shop, cast: Cast, juans_jobs: tuple[Job, Job, Job], answer: str
) -> None:
    thursday = juans_jobs[2]
    reply = answer.format(thursday=thursday.pk)
    turn = desk.run(cancel_job, "cancel_job", "scheduling", resumed=True,
                    text=f"cancelá el trabajo de Juan\n{reply}", customer="Juan Pérez")  # fmt: skip
    assert turn.outcome.clarify is None and turn.outcome.success, turn.text
    assert _cancel_held(cast) == thursday.pk
    assert "corrijo" not in turn.text


def test_an_answer_that_fits_no_job_asks_again(
    desk: Desk, shop: Shop, juans_jobs: tuple[Job, Job, Job]
) -> None:
    text = "cancelá el trabajo de Juan\nel del sábado"
    turn = desk.run(cancel_job, "cancel_job", "scheduling", resumed=True, text=text,
                    customer="Juan Pérez")  # fmt: skip
    _asks(turn, "job_choice")
    assert not PendingAction.objects.exists()


def test_a_text_that_is_not_an_answer_picks_nothing() -> None:
    jobs = [{"id": 7, "line": "martes"}, {"id": 9, "line": "jueves"}]

    def step(text: str, *, resumed: bool = True) -> Step:
        return Step(index=0, intent="cancel_job", agent="scheduling", confidence=1.0, text=text,
                    entities=Entities(), resumed=resumed)  # fmt: skip

    def line(job: dict[str, Any]) -> str:
        return str(job["line"])

    assert answered(step("cancelá\nel del jueves", resumed=False), jobs, line) is None
    assert answered(step("el del jueves"), jobs, line) is None  # no answer line
    assert answered(step("cancelá\nel #9"), jobs, line) == jobs[1]
    assert answered(step("cancelá\nel 2"), jobs, line) == jobs[1]
    assert answered(step("cancelá\nel 7"), jobs, line) == jobs[0]  # an id, not a place
    assert answered(step("cancelá\nel quinto"), jobs, line) is None
    assert answered(step("cancelá\nuno u otro"), jobs, line) is None


# --- several customers ----------------------------------------------------------------------


@pytest.fixture
def two_juans(cast: Cast, shop: Shop) -> Customer:
    """Another Juan of the organisation: «Juan» now fits two customers (Gómez ranks first)."""
    return factories.make_customer(cast.org, "Juan Gómez", phone="+541100000000", zone="CABA")


def test_a_name_of_several_customers_is_a_question(
    desk: Desk, shop: Shop, two_juans: Customer
) -> None:
    turn = desk.run(book_job, "book_job", "scheduling", customer="Juan", date=TUESDAY,
                    time="10:00")  # fmt: skip
    _asks(turn, "customer_choice")
    assert "Hay varios clientes que coinciden con «Juan»" in turn.text
    assert not Job.objects.filter(organisation=shop.juan.organisation).exists()
    assert_no_foreign_data(turn.text)


def test_after_the_limit_the_first_ranked_customer_is_booked_and_named(
    desk: Desk, shop: Shop, two_juans: Customer
) -> None:
    turn = desk.run(book_job, "book_job", "scheduling", customer="Juan", date=TUESDAY,
                    time="10:00", best_effort=True)  # fmt: skip
    _states(turn)
    assert turn.outcome.success
    job = Job.objects.get(organisation=two_juans.organisation)
    assert job.customer == two_juans
    assert turn.text.endswith(
        f"Había varios clientes «Juan»: tomé Juan Gómez (#{two_juans.pk}) — +54 11 0000-0000 — "
        f"{two_juans.primary_address}. Si era otro, decime cuál y lo corrijo."
    )
    assert_no_foreign_data(turn.text)


def test_the_answer_names_the_customer_and_the_step_goes_on(
    desk: Desk, shop: Shop, two_juans: Customer
) -> None:
    text = "agendá a Juan el martes a las 10\nel de Pérez"
    turn = desk.run(book_job, "book_job", "scheduling", text=text, customer="Juan",
                    date=TUESDAY, time="10:00", resumed=True)  # fmt: skip
    assert turn.outcome.success, turn.text
    assert Job.objects.get(organisation=shop.juan.organisation).customer == shop.juan
    assert "corrijo" not in turn.text


def test_a_customer_search_with_several_matches_asks_and_after_the_limit_shows_the_first(
    desk: Desk, shop: Shop, two_juans: Customer
) -> None:
    asked = desk.run(search_customer, "search_customer", "customer", customer="Juan")
    _asks(asked, "customer_choice")
    shown = desk.run(search_customer, "search_customer", "customer", customer="Juan",
                     best_effort=True, language="en")  # fmt: skip
    _states(shown)
    assert shown.text.startswith(f"Juan Gómez (customer #{two_juans.pk}):")
    assert "There were several customers for “Juan”: I took Juan Gómez" in shown.text
    answered_ = desk.run(search_customer, "search_customer", "customer", customer="Juan",
                         text="buscá a Juan\nel de Mitre", resumed=True)  # fmt: skip
    # Both live on Av. Mitre: the answer fits both, so the list is asked again.
    _asks(answered_, "customer_choice")


@pytest.mark.parametrize("best_effort", [False, True])
def test_payments_and_quotes_of_an_ambiguous_name(
    desk: Desk, shop: Shop, two_juans: Customer, best_effort: bool
) -> None:
    paid = desk.run(payment_status, "payment_status", "financial", customer="Juan",
                    best_effort=best_effort)  # fmt: skip
    quoted = desk.run(generate_quote, "generate_quote", "financial", customer="Juan",
                      service="instalación de split", best_effort=best_effort)  # fmt: skip
    for turn in (paid, quoted):
        if best_effort:
            _states(turn)
            assert turn.outcome.success and "tomé Juan Gómez" in turn.text
        else:
            _asks(turn, "customer_choice")
        assert_no_foreign_data(turn.text)


# --- technicians and vehicles ---------------------------------------------------------------


@pytest.fixture
def two_carlos(cast: Cast, shop: Shop) -> Technician:
    return factories.make_technician(cast.org, "Carlos Díaz", skills=["ac"], zone="Norte")


def test_a_name_of_several_technicians_is_a_question(
    office: Office, shop: Shop, two_carlos: Technician
) -> None:
    turn = office.run(technician_sick, "technician_sick", "fleet", text="Carlos está enfermo",
                      technician="Carlos")  # fmt: skip
    _asks(turn, "technician_choice")
    assert not Absence.objects.exists()


def test_the_answer_names_the_technician(
    office: Office, shop: Shop, two_carlos: Technician
) -> None:
    turn = office.run(technician_sick, "technician_sick", "fleet", resumed=True,
                      text="Carlos está enfermo\nDíaz", technician="Carlos")  # fmt: skip
    assert turn.outcome.clarify is None, turn.text
    assert turn.text.startswith("Carlos Díaz no trabaja hoy, lunes 23/11 (motivo: enfermo).")
    (absence,) = PendingAction.objects.filter(tool="technician_absence_record")
    assert absence.arguments["technician_id"] == two_carlos.pk
    assert "corrijo" not in turn.text


def test_after_the_limit_the_first_technician_is_taken_and_named(
    office: Office, shop: Shop, cast: Cast, two_carlos: Technician
) -> None:
    turn = office.run(bulk_reschedule, "bulk_reschedule", "fleet",
                      text="pasá los trabajos de Carlos del martes al jueves",
                      technician="Carlos", best_effort=True)  # fmt: skip
    _states(turn)
    # Namesakes rank by name: Díaz before Gómez.
    assert turn.text.endswith(
        "Había varios técnicos «Carlos»: tomé Carlos Díaz (Norte). Si era otro, decime cuál y lo "
        "corrijo."
    )
    assert "los trabajos de Carlos Díaz del martes 24/11" in turn.text


@pytest.fixture
def two_kangoos(cast: Cast, shop: Shop) -> tuple[Vehicle, Vehicle, Job]:
    org = cast.org
    white = factories.make_vehicle(org, "AB123CD", kind="van", description="Kangoo blanca")
    red = factories.make_vehicle(org, "AC456EF", kind="van", description="Kangoo roja")
    job = factories.make_job(org, shop.juan, at(TUESDAY, 10), technician=shop.carlos)
    return white, red, job


def _vehicle_of(job: Job) -> str | None:
    row = Job.objects.select_related("vehicle").get(pk=job.pk)
    return row.vehicle.plate if row.vehicle else None


def test_several_free_vehicles_are_a_question_and_the_answer_picks_one(
    office: Office, shop: Shop, two_kangoos: tuple[Vehicle, Vehicle, Job]
) -> None:
    _white, red, job = two_kangoos
    text = "asignale la kangoo al trabajo de Juan"
    asked = office.run(assign_vehicle, "assign_vehicle", "fleet", text=text, customer="Juan Pérez")
    _asks(asked, "vehicle_choice")
    assert _vehicle_of(job) is None
    turn = office.run(assign_vehicle, "assign_vehicle", "fleet", text=f"{text}\nla roja",
                      customer="Juan Pérez", resumed=True)  # fmt: skip
    assert turn.outcome.success, turn.text
    assert _vehicle_of(job) == red.plate


def test_after_the_limit_the_first_free_vehicle_is_assigned_and_named(
    office: Office, shop: Shop, two_kangoos: tuple[Vehicle, Vehicle, Job]
) -> None:
    white, _red, job = two_kangoos
    text = "asignale la kangoo al trabajo de Juan"
    turn = office.run(assign_vehicle, "assign_vehicle", "fleet", best_effort=True, text=text,
                      customer="Juan Pérez")  # fmt: skip
    _states(turn)
    assert _vehicle_of(job) == white.plate
    assert turn.text.endswith(
        "Había varios vehículos libres que coinciden: tomé AB123CD (Kangoo blanca). Si era otro, "
        "decime cuál y lo corrijo."
    )


# --- the step's events and the consulted footer ---------------------------------------------


def test_a_question_ends_the_step_as_clarifying_and_the_footer_is_unchanged(
    desk: Desk, cast: Cast, shop: Shop
) -> None:
    conversation = conversation_create(organisation=cast.org, user=cast.operator)
    events: list[dict[str, Any]] = []

    def sink(event: Mapping[str, object]) -> None:
        events.append(dict(event))

    turn_id = uuid.uuid4().hex
    ctx = TurnContext(organisation=cast.org, user=cast.operator, conversation_id=conversation.pk,
                      now=NOW, turn_id=turn_id, emit=sink)  # fmt: skip
    run_of_turn = TurnRun(
        ctx=ctx, engine="embedded", llm=None, stream=TextStream(ctx.emit, turn_id),
        agents=desk.agents,
    )  # fmt: skip

    def run(intent: str, handler_entities: dict[str, Any], index: int) -> None:
        step = Step(index=index, intent=intent, agent="scheduling", confidence=0.9,
                    text=intent, entities=Entities(**handler_entities))  # fmt: skip
        execute_step(run_of_turn, Chain("es"), desk.agents["scheduling"], step, "classifier")

    run("book_job", {"date": TUESDAY, "time": "10:00"}, 0)  # asks for the customer
    run("check_availability", {"date": TUESDAY}, 1)  # answers
    ends = [event for event in events if event["type"] == "agent_end"]
    assert [(e["intent"], e["success"], e.get("clarifying")) for e in ends] == [
        ("book_job", False, True),
        ("check_availability", True, None),
    ]
    consulted = consulted_for_turn(cast.org, turn_id, {"scheduling": "Agenda"})
    assert [(c["intent"], c["success"]) for c in consulted] == [
        ("book_job", False),
        ("check_availability", True),
    ]
    assert not consulted_for_turn(cast.other_org, turn_id, {})
