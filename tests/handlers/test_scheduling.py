"""The scheduling agent's handlers: book, reschedule, cancel and check availability."""

from __future__ import annotations

import re
from typing import Any

import pytest

from agents.base import HANDLERS, Mutation, load_handlers
from agents.scheduling.agent import book_job, cancel_job, check_availability, reschedule
from approvals.models import PendingAction
from business.models import Job
from tests import factories
from tests.handlers.conftest import (
    MONDAY,
    THURSDAY,
    TUESDAY,
    WEDNESDAY,
    Desk,
    Shop,
    Turn,
    assert_no_foreign_data,
    at,
)

pytestmark = pytest.mark.django_db


def _book(desk: Desk, **kwargs: Any) -> Turn:
    return desk.run(book_job, "book_job", "scheduling", **kwargs)


def test_every_intent_of_the_three_agents_has_a_handler() -> None:
    load_handlers()
    intents = {
        "book_job", "reschedule", "cancel_job", "check_availability", "create_customer",
        "search_customer", "update_customer", "validate_cuit", "generate_quote",
        "generate_invoice", "payment_status",
    }  # fmt: skip
    assert intents <= set(HANDLERS)


# --- book_job -------------------------------------------------------------------------------


def test_book_job_books_the_nearest_free_technician_and_says_so(desk: Desk, shop: Shop) -> None:
    assert not Job.objects.filter(customer=shop.juan).exists()
    turn = desk.run(
        book_job, "book_job", "scheduling", customer="Juan Pérez", customer_matched=True,
        date=TUESDAY, time="10:00", service="instalación de split",
    )  # fmt: skip
    job = Job.objects.get(customer=shop.juan)
    assert turn.outcome.success, turn.outcome.error
    assert job.technician == shop.carlos  # Juan lives in Sur, like Carlos
    assert job.scheduled_start == at(TUESDAY, 10)
    assert turn.text.startswith(
        "Listo, te agendé a Juan Pérez el martes 24/11 10:00 con Carlos Gómez (instalación de split"
    )
    assert turn.text.endswith(f"Es el trabajo #{job.pk}.")
    [mutation] = turn.outcome.mutations
    assert (mutation.kind, mutation.id) == ("job", job.pk)
    assert mutation.data["customer_id"] == shop.juan.pk
    assert turn.tools == ["job_book"]
    assert [e["type"] for e in turn.events] == ["tool_start", "tool_result", "tool_end"]
    assert_no_foreign_data(turn.text)


def test_book_job_answers_in_english_with_english_dates(desk: Desk, shop: Shop) -> None:
    turn = _book(desk, customer="Juan Pérez", date=TUESDAY, time="15:00", language="en")
    assert turn.outcome.success
    assert turn.text.startswith(
        "Done: I booked Juan Pérez for Tue 24 Nov 15:00 with Carlos Gómez (Visita técnica, "
    )


def test_a_taken_slot_gets_the_next_three_concrete_slots(desk: Desk, shop: Shop) -> None:
    org = shop.juan.organisation
    for tech in (shop.carlos, shop.lucia):  # both AC technicians busy all Tuesday
        factories.make_job(org, shop.maria, at(TUESDAY, 8), hours=9, technician=tech)
    before = Job.objects.filter(organisation=org).count()
    turn = desk.run(
        book_job, "book_job", "scheduling", customer="Juan Pérez", date=TUESDAY, time="10:00",
        service="instalación de split",
    )  # fmt: skip
    assert not turn.outcome.success
    assert "10:00. No hay ningún técnico libre para ese trabajo" in turn.outcome.text
    assert Job.objects.filter(organisation=org).count() == before  # nothing booked
    lines = [line for line in turn.text.splitlines() if line[:2] in ("1.", "2.", "3.")]
    assert len(lines) == 3
    assert lines[0] == "1. miércoles 25/11 08:00 con Carlos Gómez"
    assert all(" con " in line for line in lines)
    assert turn.text.rstrip().endswith("¿Cuál te sirve?")
    assert_no_foreign_data(turn.text)


def test_a_day_without_a_time_takes_its_first_free_slot(desk: Desk, shop: Shop) -> None:
    org = shop.juan.organisation
    factories.make_job(org, shop.maria, at(WEDNESDAY, 8), hours=2, technician=shop.carlos)
    factories.make_job(org, shop.maria, at(WEDNESDAY, 8), hours=2, technician=shop.lucia)
    turn = _book(desk, customer="Juan Pérez", date=WEDNESDAY, service="service de aire")
    job = Job.objects.get(customer=shop.juan)
    assert job.scheduled_start == at(WEDNESDAY, 10)
    assert "el miércoles 25/11 10:00, el primer turno libre de ese día," in turn.text


def test_book_job_uses_the_customer_registered_by_an_earlier_step(desk: Desk, shop: Shop) -> None:
    ana = factories.make_customer(shop.juan.organisation, "Ana Torres", zone="CABA")
    earlier = [Mutation(kind="customer", id=ana.pk, label="Ana Torres")]
    turn = _book(desk, earlier=earlier, date=TUESDAY, time="09:00")
    assert turn.outcome.success
    assert Job.objects.get(customer=ana).technician == shop.lucia  # CABA


def test_book_job_without_a_customer_asks_which(desk: Desk, shop: Shop) -> None:
    turn = _book(desk, date=TUESDAY, time="09:00")
    assert not turn.outcome.success and turn.outcome.error == "missing customer"
    assert "¿Para qué cliente" in turn.text
    assert turn.tools == []
    assert not Job.objects.filter(organisation=shop.juan.organisation).exists()


def test_book_job_for_an_unknown_customer_says_so_and_books_nothing(desk: Desk, shop: Shop) -> None:
    turn = _book(desk, customer="Roberto Inexistente", date=TUESDAY, time="09:00")
    assert not turn.outcome.success
    assert "No encontré ningún cliente «Roberto Inexistente»" in turn.text
    assert not Job.objects.filter(organisation=shop.juan.organisation).exists()


def test_book_job_without_a_date_offers_the_next_slots(desk: Desk, shop: Shop) -> None:
    turn = _book(desk, customer="Juan Pérez", service="service de aire")
    assert turn.outcome.error == "missing date"
    assert "1. lunes 23/11 08:00 con Carlos Gómez" in turn.text
    assert not Job.objects.filter(customer=shop.juan).exists()


# --- reschedule -----------------------------------------------------------------------------


def test_reschedule_moves_the_job_under_discussion_keeping_its_time(desk: Desk, shop: Shop) -> None:
    job = factories.make_job(shop.juan.organisation, shop.juan, at(TUESDAY, 10),
                             technician=shop.carlos)  # fmt: skip
    state = {"job_id": job.pk, "customer_id": shop.juan.pk, "customer_label": "Juan Pérez"}
    turn = desk.run(reschedule, "reschedule", "scheduling", state=state, date=THURSDAY,
                    text="pasalo al jueves a la misma hora")  # fmt: skip
    job.refresh_from_db()
    assert turn.outcome.success, turn.outcome.error
    assert job.scheduled_start == at(THURSDAY, 10)
    assert "del martes 24/11 10:00 al jueves 26/11 10:00" in turn.text
    assert turn.tools == ["job_reschedule"]
    assert turn.outcome.mutations[0].id == job.pk


def test_reschedule_finds_the_customers_only_open_job(desk: Desk, shop: Shop) -> None:
    org = shop.juan.organisation
    job = factories.make_job(org, shop.juan, at(TUESDAY, 10), technician=shop.carlos)
    factories.make_job(org, shop.juan, at(MONDAY, 8), technician=shop.carlos, status="done")
    turn = desk.run(reschedule, "reschedule", "scheduling", customer="Juan Pérez",
                    date=WEDNESDAY, time="14:00")  # fmt: skip
    job.refresh_from_db()
    assert turn.outcome.success, turn.outcome.error
    assert job.scheduled_start == at(WEDNESDAY, 14)
    assert turn.tools == ["jobs_find", "job_reschedule"]


def test_reschedule_to_a_busy_time_offers_alternatives_and_moves_nothing(
    desk: Desk, shop: Shop
) -> None:
    org = shop.juan.organisation
    job = factories.make_job(org, shop.juan, at(TUESDAY, 10), technician=shop.carlos)
    factories.make_job(org, shop.maria, at(THURSDAY, 9), hours=4, technician=shop.carlos)
    turn = desk.run(reschedule, "reschedule", "scheduling", state={"job_id": job.pk},
                    date=THURSDAY, time="10:00")  # fmt: skip
    job.refresh_from_db()
    assert not turn.outcome.success
    assert job.scheduled_start == at(TUESDAY, 10)
    assert f"No pude pasar el trabajo #{job.pk} al jueves 26/11 10:00. Carlos Gómez ya" in turn.text
    assert "1. jueves 26/11 10:00 con Lucía Fernández" in turn.text  # another technician then


def test_reschedule_without_a_target_asks_when(desk: Desk, shop: Shop) -> None:
    turn = desk.run(reschedule, "reschedule", "scheduling", customer="Juan Pérez")
    assert turn.outcome.error == "missing target" and turn.tools == []


# --- cancel_job -----------------------------------------------------------------------------


def test_cancel_is_held_for_approval_and_the_job_stays_booked(desk: Desk, shop: Shop) -> None:
    job = factories.make_job(shop.juan.organisation, shop.juan, at(TUESDAY, 10),
                             technician=shop.carlos)  # fmt: skip
    turn = desk.run(cancel_job, "cancel_job", "scheduling", state={"job_id": job.pk},
                    text="cancelalo, se mudó")  # fmt: skip
    action = PendingAction.objects.get(organisation=shop.juan.organisation)
    job.refresh_from_db()
    assert job.status == Job.Status.SCHEDULED  # nothing cancelled yet
    assert (action.tool, action.arguments["job_id"], action.status) == (
        "job_cancel",
        job.pk,
        "pending",
    )
    assert turn.outcome.success and turn.outcome.pending_approvals == [action.pk]
    assert f"Pedí cancelar el trabajo #{job.pk} Service de aire acondicionado — Juan Pérez" in (
        turn.text
    )
    assert "martes 24/11 10:00" in turn.text and f"pedido #{action.pk}" in turn.text
    assert "sigue agendado" in turn.text
    assert any(e["type"] == "approval_requested" for e in turn.events)


def test_cancel_with_several_open_jobs_asks_which(desk: Desk, shop: Shop) -> None:
    org = shop.juan.organisation
    factories.make_job(org, shop.juan, at(TUESDAY, 10), technician=shop.carlos)
    factories.make_job(org, shop.juan, at(THURSDAY, 10), technician=shop.carlos)
    turn = desk.run(cancel_job, "cancel_job", "scheduling", customer="Juan Pérez")
    assert turn.outcome.error == "several jobs"
    assert "Hay 2 trabajos abiertos de Juan Pérez" in turn.text
    assert not PendingAction.objects.exists()
    assert_no_foreign_data(turn.text)


def test_cancel_of_a_finished_job_files_nothing(desk: Desk, shop: Shop) -> None:
    job = factories.make_job(shop.juan.organisation, shop.juan, at(MONDAY, 8), status="done")
    turn = desk.run(cancel_job, "cancel_job", "scheduling", state={"job_id": job.pk},
                    language="en")  # fmt: skip
    assert not turn.outcome.success and "is already done" in turn.text
    assert not PendingAction.objects.exists()


# --- check_availability ---------------------------------------------------------------------


def test_availability_of_a_day_lists_its_free_slots(desk: Desk, shop: Shop) -> None:
    factories.make_job(shop.juan.organisation, shop.juan, at(TUESDAY, 8), technician=shop.carlos)
    turn = desk.run(check_availability, "check_availability", "scheduling", date=TUESDAY,
                    service="service de aire")  # fmt: skip
    assert turn.outcome.success
    assert turn.text.startswith(
        "El martes 24/11 hay turnos libres para service de aire:\n"
        "1. martes 24/11 08:00 con Lucía Fernández\n2. martes 24/11 09:00 con Lucía Fernández\n"
        "3. martes 24/11 10:00 con Carlos Gómez (también Lucía Fernández)\n"
    )  # who else is free then: "which technicians are free" named one technician per start
    assert turn.tools == ["slots_find"]
    assert_no_foreign_data(turn.text)


def test_availability_for_a_named_technician_lists_their_jobs(desk: Desk, shop: Shop) -> None:
    factories.make_job(shop.juan.organisation, shop.juan, at(TUESDAY, 8), technician=shop.carlos)
    turn = desk.run(check_availability, "check_availability", "scheduling", date=TUESDAY,
                    technician="Carlos")  # fmt: skip
    assert "Carlos Gómez ya tiene trabajos ese día: 08:00–10:00." in turn.text
    assert turn.tools == ["slots_find", "jobs_find"]


def test_availability_at_a_busy_time_gives_the_next_slots(desk: Desk, shop: Shop) -> None:
    org = shop.juan.organisation
    for tech in (shop.carlos, shop.lucia):
        factories.make_job(org, shop.juan, at(TUESDAY, 9), hours=3, technician=tech)
    turn = desk.run(check_availability, "check_availability", "scheduling", date=TUESDAY,
                    time="10:00", service="service de aire")  # fmt: skip
    assert "El martes 24/11 10:00 no hay nadie libre" in turn.text
    assert "1. martes 24/11 12:00 con" in turn.text


def test_availability_on_a_closed_day_says_so_and_offers_the_next(desk: Desk, shop: Shop) -> None:
    sunday = MONDAY.replace(day=29)
    turn = desk.run(check_availability, "check_availability", "scheduling", date=sunday,
                    language="en")  # fmt: skip
    assert turn.text.startswith("We don't work on Sun 29 Nov. The next ones:\n1. Mon 30 Nov 08:00")


def test_another_organisations_job_is_neither_moved_nor_cancelled(desk: Desk, shop: Shop) -> None:
    foreign = shop.foreign_job
    moved = desk.run(reschedule, "reschedule", "scheduling", state={"job_id": foreign.pk},
                     date=THURSDAY)  # fmt: skip
    cancelled = desk.run(cancel_job, "cancel_job", "scheduling", state={"job_id": foreign.pk})
    foreign.refresh_from_db()
    assert foreign.scheduled_start == at(TUESDAY, 10) and foreign.status == "scheduled"
    assert not moved.outcome.success and not cancelled.outcome.success
    assert not PendingAction.objects.exists()
    assert moved.text == f"No pude mover el trabajo #{foreign.pk}: no lo encontré."
    assert cancelled.text == f"No encontré el trabajo #{foreign.pk}."
    for turn in (moved, cancelled):
        assert "Service ajeno" not in turn.text
        assert_no_foreign_data(turn.text)


# --- issue 17: impossible dates, parts of the day, jobs by number ----------------------------


@pytest.mark.parametrize("written", ["31/11", "31/02"])
def test_an_impossible_date_is_asked_about_and_nothing_is_booked(
    desk: Desk, shop: Shop, written: str
) -> None:
    turn = _book(desk, customer="Juan Pérez", time="10:00", impossible_date=written,
                 text=f"agendá a Juan Pérez el {written} a las 10")  # fmt: skip
    assert turn.text == f"El {written} no existe: ¿qué día querés?"
    assert turn.outcome.clarify is not None and turn.outcome.clarify.slot == "date"
    assert not Job.objects.filter(customer=shop.juan).exists()
    assert turn.tools == []


def test_an_impossible_target_date_moves_nothing(desk: Desk, shop: Shop) -> None:
    job = factories.make_job(shop.juan.organisation, shop.juan, at(TUESDAY, 10))
    turn = desk.run(reschedule, "reschedule", "scheduling", job_id=job.pk,
                    impossible_date="31/11", text=f"pasá el #{job.pk} al 31/11")  # fmt: skip
    job.refresh_from_db()
    assert turn.text == "El 31/11 no existe: ¿qué día querés?"
    assert job.scheduled_start == at(TUESDAY, 10)


def test_availability_of_an_impossible_date_asks_which_day(desk: Desk, shop: Shop) -> None:
    turn = desk.run(check_availability, "check_availability", "scheduling",
                    impossible_date="30/02", text="¿qué hay libre el 30/02?")  # fmt: skip
    assert turn.text == "El 30/02 no existe: ¿qué día querés?"


def test_availability_in_the_afternoon_lists_only_afternoon_slots(desk: Desk, shop: Shop) -> None:
    turn = desk.run(check_availability, "check_availability", "scheduling", date=TUESDAY,
                    part_of_day="afternoon", text="libres mañana a la tarde")  # fmt: skip
    assert turn.text.startswith(
        "El martes 24/11 a la tarde hay turnos libres:\n1. martes 24/11 14:00"
    )
    hours = [int(h) for h in re.findall(r"24/11 (\d\d):\d\d", turn.text)]
    assert hours and all(14 <= h < 19 for h in hours)


def test_availability_in_the_morning_in_english(desk: Desk, shop: Shop) -> None:
    turn = desk.run(check_availability, "check_availability", "scheduling", date=TUESDAY,
                    part_of_day="morning", language="en", text="Tuesday morning")  # fmt: skip
    hours = [int(h) for h in re.findall(r"24 Nov (\d\d):\d\d", turn.text)]
    assert turn.text.startswith("On Tue 24 Nov in the morning these slots are free")
    assert hours and all(h < 12 for h in hours)


def test_booking_a_day_in_the_afternoon_takes_its_first_afternoon_slot(
    desk: Desk, shop: Shop
) -> None:
    turn = _book(desk, customer="Juan Pérez", date=TUESDAY, part_of_day="afternoon")
    job = Job.objects.get(customer=shop.juan)
    assert turn.outcome.success
    assert job.scheduled_start == at(TUESDAY, 14)


@pytest.mark.parametrize("missing", ["foreign", "unknown"])
def test_a_job_number_that_is_not_ours_is_said_and_nothing_is_written(
    desk: Desk, shop: Shop, missing: str
) -> None:
    ours = factories.make_job(shop.juan.organisation, shop.juan, at(TUESDAY, 10))
    number = shop.foreign_job.pk if missing == "foreign" else 99999
    state = {"job_id": ours.pk, "customer_id": shop.juan.pk, "customer_label": "Juan Pérez"}
    moved = desk.run(reschedule, "reschedule", "scheduling", job_id=number, date=THURSDAY,
                     time="11:00", state=state)  # fmt: skip
    cancelled = desk.run(cancel_job, "cancel_job", "scheduling", job_id=number, state=state)
    for turn in (moved, cancelled):
        assert turn.text == f"No encontré el trabajo #{number}."
        assert turn.tools == ["jobs_find"]
    ours.refresh_from_db()
    shop.foreign_job.refresh_from_db()
    assert ours.scheduled_start == at(TUESDAY, 10) and ours.status == "scheduled"
    assert shop.foreign_job.scheduled_start == at(TUESDAY, 10)
    assert not PendingAction.objects.exists()
