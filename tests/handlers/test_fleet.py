"""The fleet agent's handlers: absences with a redistribution proposal, bulk moves, dispatch and
vehicles — every consequential write held for a manager, nothing moved before the approval."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

import pytest

from agents.base import HANDLERS, Mutation, load_handlers
from agents.fleet.agent import assign_vehicle, bulk_reschedule, dispatch, technician_sick
from approvals.models import PendingAction
from business.models import Absence, Job, Vehicle
from tests import factories
from tests.conftest import Cast
from tests.handlers.conftest import (
    MONDAY,
    THURSDAY,
    TUESDAY,
    WEDNESDAY,
    Shop,
    Turn,
    assert_no_foreign_data,
    at,
)
from tests.handlers.office import OFFICE_TOOLS, SHIPPED_TOOLS, Office, install_office_agents

pytestmark = pytest.mark.django_db


def _pending(cast: Cast) -> list[PendingAction]:
    return list(PendingAction.objects.filter(organisation=cast.org).order_by("pk"))


def test_every_fleet_intent_has_a_handler() -> None:
    load_handlers()
    assert {"assign_vehicle", "technician_sick", "bulk_reschedule", "dispatch"} <= set(HANDLERS)


# --- technician_sick --------------------------------------------------------------------------


@pytest.fixture
def carlos_day(cast: Cast, shop: Shop) -> tuple[Job, Job]:
    """Carlos's Monday: an AC job in Sur (Lucía can take it) and a heating job nobody else can
    do (only Carlos has the trade)."""
    org = cast.org
    ac = factories.make_job(org, shop.juan, at(MONDAY, 10), technician=shop.carlos)
    heating = factories.make_job(
        org, shop.maria, at(MONDAY, 14), technician=shop.carlos, skill="heating",
        service="Service de caldera",
    )  # fmt: skip
    factories.make_job(org, shop.maria, at(MONDAY, 9), technician=shop.pedro, skill="electrical")
    return ac, heating


def test_a_sick_technician_gets_affected_jobs_a_proposal_and_two_held_approvals(
    office: Office, shop: Shop, carlos_day: tuple[Job, Job], cast: Cast
) -> None:
    ac, heating = carlos_day
    turn = office.run(
        technician_sick, "technician_sick", "fleet", text="Carlos está enfermo hoy",
        technician="Carlos Gómez", date=MONDAY,
    )  # fmt: skip
    assert turn.outcome.success, turn.outcome.error
    assert turn.tools == [
        "technician_jobs_affected", "technician_absence_record", "jobs_redistribute",
        "jobs_redistribute",
    ]  # fmt: skip
    absence, redistribution = _pending(cast)
    assert absence.tool == "technician_absence_record"
    assert absence.arguments["technician_id"] == shop.carlos.pk
    assert absence.arguments["start_date"] == absence.arguments["end_date"] == MONDAY.isoformat()
    assert redistribution.tool == "jobs_redistribute"
    assert redistribution.arguments["dry_run"] is False
    assert turn.outcome.pending_approvals == [absence.pk, redistribution.pk]
    # Nothing happened yet: no absence, both jobs still Carlos's.
    assert not Absence.objects.filter(technician=shop.carlos).exists()
    assert {j.technician_id for j in Job.objects.filter(pk__in=[ac.pk, heating.pk])} == {
        shop.carlos.pk
    }
    text = turn.text
    assert "Carlos Gómez no trabaja hoy, lunes 23/11 (motivo: enfermo)." in text
    assert f"pedido #{absence.pk}" in text and f"pedido #{redistribution.pk}" in text
    assert f"#{ac.pk} Service de aire acondicionado — Juan Pérez, lunes 23/11 10:00 (Sur)" in text
    assert f"#{ac.pk} Juan Pérez, lunes 23/11 10:00 (Sur) → Lucía Fernández" in text
    assert f"#{heating.pk} María González SRL, lunes 23/11 14:00:" in text.split("Sin nadie")[1]
    assert "siguen a nombre de Carlos Gómez" in text
    [mutation] = turn.outcome.mutations
    assert (mutation.kind, mutation.id, mutation.label) == ("technician", shop.carlos.pk,
                                                            "Carlos Gómez")  # fmt: skip
    assert mutation.data["job_ids"] == [ac.pk, heating.pk]
    assert_no_foreign_data(text)


def test_an_absence_until_a_day_covers_the_range(office: Office, shop: Shop, cast: Cast) -> None:
    factories.make_job(cast.org, shop.juan, at(WEDNESDAY, 9), technician=shop.carlos)
    turn = office.run(
        technician_sick, "technician_sick", "fleet",
        text="Carlos no viene hasta el miércoles, está con gripe", technician="Carlos",
        date=WEDNESDAY,
    )  # fmt: skip
    absence = _pending(cast)[0]
    assert (absence.arguments["start_date"], absence.arguments["end_date"]) == (
        MONDAY.isoformat(), WEDNESDAY.isoformat(),
    )  # fmt: skip
    assert "del lunes 23/11 al miércoles 25/11 (motivo: enfermo)" in turn.text


def test_a_day_the_jobs_move_to_is_not_the_day_of_the_absence(
    office: Office, shop: Shop, cast: Cast
) -> None:
    office.run(
        technician_sick, "technician_sick", "fleet", technician="Carlos",
        text="Carlos está enfermo, pasá sus trabajos al jueves", date=THURSDAY,
    )  # fmt: skip
    absence = _pending(cast)[0]
    assert absence.arguments["start_date"] == absence.arguments["end_date"] == MONDAY.isoformat()


@pytest.mark.parametrize(
    ("language", "text"),
    [
        ("en", "he called in sick for tomorrow"),
        ("es", "avisó que para mañana no viene, está enfermo"),
        ("es", "Carlos mañana no viene"),
    ],
)
def test_the_day_said_about_the_absence_is_its_first_day(
    office: Office, shop: Shop, cast: Cast, language: str, text: str
) -> None:
    office.run(
        technician_sick, "technician_sick", "fleet", technician="Carlos", text=text,
        date=TUESDAY, language=language,
    )  # fmt: skip
    absence = _pending(cast)[0]
    assert absence.arguments["start_date"] == absence.arguments["end_date"] == TUESDAY.isoformat()


@pytest.mark.parametrize(
    ("language", "text", "reason"),
    [
        ("en", "Carlos has the flu", "sick"),
        ("en", "Carlos has a fever today", "sick"),
        ("es", "Carlos tiene gripe", "enfermo"),
        ("es", "Carlos no viene, tiene fiebre", "enfermo"),
        ("es", "Carlos no viene hoy", "ausente"),
    ],
)
def test_an_illness_is_recorded_as_sick(
    office: Office, shop: Shop, cast: Cast, language: str, text: str, reason: str
) -> None:
    office.run(
        technician_sick, "technician_sick", "fleet", technician="Carlos", text=text,
        language=language,
    )  # fmt: skip
    assert _pending(cast)[0].arguments["reason"] == reason


def test_a_sick_technician_without_jobs_files_only_the_absence(
    office: Office, shop: Shop, cast: Cast
) -> None:
    turn = office.run(
        technician_sick, "technician_sick", "fleet", text="Pedro is sick today",
        technician="Pedro", language="en",
    )  # fmt: skip
    assert turn.outcome.success
    assert turn.tools == ["technician_jobs_affected", "technician_absence_record"]
    [absence] = _pending(cast)
    assert "Pedro Ruiz is out today, Mon 23 Nov (reason: sick)." in turn.text
    assert f"request #{absence.pk}" in turn.text
    assert "nothing to redistribute" in turn.text


def test_when_nobody_can_take_the_jobs_no_redistribution_is_filed(
    office: Office, shop: Shop, cast: Cast
) -> None:
    factories.make_job(
        cast.org, shop.maria, at(MONDAY, 14), technician=shop.carlos, skill="heating"
    )
    turn = office.run(technician_sick, "technician_sick", "fleet", technician="Carlos Gómez")
    assert [p.tool for p in _pending(cast)] == ["technician_absence_record"]
    assert "No filé ninguna redistribución" in turn.text
    assert "pasá los trabajos de Carlos Gómez al jueves" in turn.text


def test_an_unknown_technician_files_nothing(office: Office, shop: Shop, cast: Cast) -> None:
    turn = office.run(technician_sick, "technician_sick", "fleet", technician="Ramiro")
    assert not turn.outcome.success
    assert "No encontré ningún técnico activo «Ramiro»" in turn.text
    assert turn.outcome.error == "technician 'Ramiro' not found"
    assert _pending(cast) == []


def test_the_other_organisations_namesake_is_not_the_sick_technician(
    office: Office, shop: Shop, cast: Cast
) -> None:
    turn = office.run(technician_sick, "technician_sick", "fleet", technician="Zoe")
    assert not turn.outcome.success and _pending(cast) == []
    assert "Zoe Foránea" not in turn.text


def test_technician_sick_without_a_name_asks(office: Office, shop: Shop) -> None:
    turn = office.run(technician_sick, "technician_sick", "fleet", text="uno de los chicos faltó")
    assert turn.outcome.error == "missing technician" and turn.tools == []


# --- bulk_reschedule --------------------------------------------------------------------------


def test_bulk_reschedule_after_a_sick_technician_moves_those_jobs_once_approved(
    office: Office, shop: Shop, carlos_day: tuple[Job, Job], cast: Cast
) -> None:
    ac, heating = carlos_day
    sick = office.run(technician_sick, "technician_sick", "fleet", technician="Carlos Gómez")
    redistribution = _pending(cast)[-1]
    turn = office.run(
        bulk_reschedule, "bulk_reschedule", "fleet", text="y pasá sus trabajos al jueves",
        earlier=sick.outcome.mutations, date=THURSDAY,
    )  # fmt: skip
    assert turn.outcome.success, turn.outcome.error
    assert turn.tools == ["jobs_bulk_reschedule", "jobs_bulk_reschedule"]
    action = _pending(cast)[-1]
    assert action.arguments == {"job_ids": [ac.pk, heating.pk], "to_date": THURSDAY.isoformat(),
                                "dry_run": False}  # fmt: skip
    assert turn.outcome.pending_approvals == [action.pk]
    text = turn.text
    assert "Pasar los 2 trabajos de Carlos Gómez afectados por la ausencia al jueves 26/11" in text
    assert f"#{ac.pk} Juan Pérez: lunes 23/11 10:00 → jueves 26/11 10:00" in text
    assert "ningún trabajo se mueve" in text
    assert text.endswith(
        f"Es una alternativa a la redistribución (pedido #{redistribution.pk}): conviene aprobar "
        "solo uno de los dos."
    )
    assert Job.objects.get(pk=ac.pk).scheduled_start == at(MONDAY, 10)  # not moved yet


def test_one_job_of_a_sick_technician_is_said_in_the_singular(
    office: Office, shop: Shop, cast: Cast
) -> None:
    job = factories.make_job(cast.org, shop.juan, at(MONDAY, 10), technician=shop.carlos)
    sick = Mutation(kind="technician", id=shop.carlos.pk, label="Carlos Gómez",
                    data={"job_ids": [job.pk]})  # fmt: skip
    turn = office.run(
        bulk_reschedule, "bulk_reschedule", "fleet", earlier=[sick], date=THURSDAY, language="en"
    )
    assert turn.text.startswith(
        "Moving Carlos Gómez's job affected by the absence to Thu 26 Nov moves 1:"
    )
    assert "alternative" not in turn.text


def test_bulk_reschedule_of_a_zone_and_day_lists_the_conflicts(
    office: Office, shop: Shop, cast: Cast
) -> None:
    org = cast.org
    free = factories.make_job(org, shop.juan, at(TUESDAY, 10), technician=shop.carlos)
    stuck = factories.make_job(
        org, shop.juan, at(TUESDAY, 14), technician=shop.carlos, skill="heating"
    )
    caba = factories.make_job(org, shop.maria, at(TUESDAY, 10), technician=shop.lucia)
    # Thursday 14:00 Carlos (the only heating technician) is already busy.
    factories.make_job(org, shop.maria, at(THURSDAY, 13), hours=3, technician=shop.carlos)
    turn = office.run(
        bulk_reschedule, "bulk_reschedule", "fleet",
        text="pasá los trabajos de mañana de zona sur al jueves", date=THURSDAY,
    )  # fmt: skip
    assert turn.outcome.success, turn.outcome.error
    [action] = _pending(cast)
    assert action.arguments["zone"] == "Sur"
    assert action.arguments["date"] == TUESDAY.isoformat()
    text = turn.text
    assert "Pasar los trabajos de la zona Sur del martes 24/11 al jueves 26/11 mueve 1" in text
    assert f"#{free.pk} Juan Pérez: martes 24/11 10:00 → jueves 26/11 10:00" in text
    assert f"No se pueden mover (1):\n- #{stuck.pk} Juan Pérez, martes 24/11 14:00:" in text
    assert f"#{caba.pk}" not in text
    assert Job.objects.get(pk=free.pk).scheduled_start == at(TUESDAY, 10)


def test_bulk_reschedule_without_a_target_day_asks(office: Office, shop: Shop) -> None:
    turn = office.run(
        bulk_reschedule, "bulk_reschedule", "fleet", text="mové todo lo de la zona sur"
    )
    assert turn.outcome.error == "missing target date" and turn.tools == []


def test_bulk_reschedule_with_nothing_to_move_files_nothing(
    office: Office, shop: Shop, cast: Cast
) -> None:
    turn = office.run(
        bulk_reschedule, "bulk_reschedule", "fleet", text="pasá los trabajos del martes al jueves",
        date=THURSDAY,
    )  # fmt: skip
    assert not turn.outcome.success and turn.outcome.error == "no jobs to move"
    assert "del martes 24/11" in turn.text
    assert _pending(cast) == []


def test_bulk_reschedule_takes_a_day_named_as_the_source_for_the_source(
    office: Office, shop: Shop
) -> None:
    # "los del jueves" names whose jobs, not where they go: no target, so it asks.
    turn = office.run(
        bulk_reschedule, "bulk_reschedule", "fleet", text="mové los trabajos del jueves",
        date=THURSDAY,
    )  # fmt: skip
    assert turn.outcome.error == "missing target date"


# --- dispatch ---------------------------------------------------------------------------------


@pytest.fixture
def working_hours(office: Office) -> Office:
    office.now = at(MONDAY, 10)
    return office


def test_dispatch_proposes_the_nearest_free_technician_and_holds_it(
    working_hours: Office, shop: Shop, cast: Cast
) -> None:
    org = cast.org
    job = factories.make_job(org, shop.juan, at(MONDAY, 15), technician=shop.lucia)
    turn = working_hours.run(
        dispatch, "dispatch", "fleet", text="mandá a alguien ya a lo de Juan Pérez",
        customer="Juan Pérez",
    )  # fmt: skip
    assert turn.outcome.success, turn.outcome.error
    assert turn.tools == ["jobs_find", "technicians_nearest", "technician_dispatch"]
    [action] = _pending(cast)
    assert action.arguments == {"job_id": job.pk, "technician_id": shop.carlos.pk}
    assert (
        f"Para el trabajo #{job.pk} Service de aire acondicionado — Juan Pérez, lunes 23/11 15:00 "
        "(Sur) propongo mandar ya a Carlos Gómez (Sur, misma zona)"
    ) in turn.text
    assert f"pedido #{action.pk}" in turn.text
    job.refresh_from_db()
    assert (job.technician_id, job.scheduled_start) == (shop.lucia.pk, at(MONDAY, 15))
    assert [m.kind for m in turn.outcome.mutations] == ["job"]
    assert_no_foreign_data(turn.text)


def test_dispatch_of_the_job_under_discussion(
    working_hours: Office, shop: Shop, cast: Cast
) -> None:
    job = factories.make_job(cast.org, shop.maria, at(TUESDAY, 9), technician=shop.carlos)
    turn = working_hours.run(
        dispatch, "dispatch", "fleet", text="despachalo ya", language="en",
        state={"job_id": job.pk, "customer_id": shop.maria.pk},
    )  # fmt: skip
    assert turn.outcome.success
    assert "I propose sending Lucía Fernández (CABA, same zone)" in turn.text
    assert _pending(cast)[0].arguments["technician_id"] == shop.lucia.pk


def test_dispatch_when_nobody_is_free_sends_nobody(
    working_hours: Office, shop: Shop, cast: Cast
) -> None:
    org = cast.org
    job = factories.make_job(org, shop.juan, at(MONDAY, 15), technician=shop.carlos)
    factories.make_job(org, shop.maria, at(MONDAY, 9), hours=6, technician=shop.carlos)
    factories.make_job(org, shop.maria, at(MONDAY, 9), hours=6, technician=shop.lucia)
    turn = working_hours.run(dispatch, "dispatch", "fleet", customer="Juan Pérez")
    assert not turn.outcome.success and turn.outcome.error == "no technician free"
    assert f"trabajo #{job.pk}" in turn.text and "No despaché a nadie" in turn.text
    assert _pending(cast) == []


def test_dispatch_for_a_customer_without_open_jobs_says_so(
    working_hours: Office, shop: Shop, cast: Cast
) -> None:
    turn = working_hours.run(dispatch, "dispatch", "fleet", customer="Juan Pérez")
    assert not turn.outcome.success and turn.outcome.error == "no open job"
    assert "Juan Pérez no tiene trabajos abiertos" in turn.text
    assert _pending(cast) == []


def test_dispatch_with_the_shipped_tools(cast: Cast, shop: Shop) -> None:
    """The shipped fleet agent finds a customer's job by name and holds the dispatch."""
    tools = {**OFFICE_TOOLS, "fleet": SHIPPED_TOOLS["fleet"]}
    office = Office(cast=cast, agents=install_office_agents(cast.org, tools), now=at(MONDAY, 10))
    job = factories.make_job(cast.org, shop.juan, at(MONDAY, 15), technician=shop.lucia)
    assert _pending(cast) == []
    by_name = office.run(dispatch, "dispatch", "fleet", customer="Juan Pérez")
    assert by_name.outcome.success, by_name.outcome.error
    assert by_name.tools[0] == "jobs_find"
    assert [p.tool for p in _pending(cast)] == ["technician_dispatch"]
    assert f"#{job.pk}" in by_name.text
    job.refresh_from_db()
    assert job.technician_id == shop.lucia.pk  # held, not moved yet


# --- assign_vehicle ---------------------------------------------------------------------------


@dataclass
class Fleet:
    kangoo: Vehicle  # Carlos's usual van
    moto: Vehicle
    job: Job  # Juan's, Tuesday 10:00 with Carlos


@pytest.fixture
def fleet_rows(cast: Cast, shop: Shop) -> Fleet:
    org = cast.org
    factories.make_vehicle(cast.other_org, "ZZ999ZZ", description="Calle Ajena")
    return Fleet(
        kangoo=factories.make_vehicle(
            org, "AB123CD", kind="van", description="Kangoo blanca", technician=shop.carlos
        ),
        moto=factories.make_vehicle(org, "A123BCD", kind="motorbike", description="Honda"),
        job=factories.make_job(org, shop.juan, at(TUESDAY, 10), technician=shop.carlos),
    )


def _vehicle_of(job: Job) -> str | None:
    row = Job.objects.select_related("vehicle").get(pk=job.pk)
    return row.vehicle.plate if row.vehicle else None


def test_assign_vehicle_by_plate_to_the_customers_job(office: Office, fleet_rows: Fleet) -> None:
    turn = office.run(
        assign_vehicle, "assign_vehicle", "fleet", text="asignale la AB 123 CD al de Juan",
        customer="Juan Pérez",
    )  # fmt: skip
    assert turn.outcome.success, turn.outcome.error
    assert _vehicle_of(fleet_rows.job) == "AB123CD"
    assert turn.text.startswith("Listo, asigné AB123CD (Kangoo blanca) al trabajo #")
    assert turn.tools == ["jobs_find", "vehicle_assign"]


def test_assign_vehicle_by_description(office: Office, fleet_rows: Fleet) -> None:
    turn = office.run(
        assign_vehicle, "assign_vehicle", "fleet", text="que Carlos use la moto",
        technician="Carlos",
    )  # fmt: skip
    assert turn.outcome.success, turn.outcome.error
    assert _vehicle_of(fleet_rows.job) == "A123BCD"
    assert turn.tools == ["technician_jobs_affected", "vehicles_available", "vehicle_assign"]


def test_assign_a_free_vehicle_to_the_job_booked_earlier(office: Office, fleet_rows: Fleet) -> None:
    job = fleet_rows.job
    data = {"customer_id": job.customer_id, "customer": "Juan Pérez", "service": "Service",
            "start": at(TUESDAY, 10).isoformat()}  # fmt: skip
    booked = Mutation(kind="job", id=job.pk, label="job", data=data)
    turn = office.run(
        assign_vehicle, "assign_vehicle", "fleet", text="y asignale un vehículo", earlier=[booked]
    )
    assert turn.outcome.success, turn.outcome.error
    assert _vehicle_of(job) == "AB123CD"  # Carlos's usual van
    assert [m.kind for m in turn.outcome.mutations] == ["job"]


def test_a_busy_vehicle_is_not_assigned_and_the_free_ones_are_offered(
    office: Office, fleet_rows: Fleet, shop: Shop, cast: Cast
) -> None:
    other = factories.make_job(
        cast.org, shop.maria, at(TUESDAY, 9), hours=3, technician=shop.lucia,
        vehicle=fleet_rows.kangoo,
    )  # fmt: skip
    turn = office.run(
        assign_vehicle, "assign_vehicle", "fleet", text="asignale la kangoo al trabajo de Juan",
        customer="Juan Pérez",
    )  # fmt: skip
    assert not turn.outcome.success and turn.outcome.error == "vehicle busy"
    assert f"AB123CD (Kangoo blanca) está ocupado el martes 24/11 10:00 (trabajo #{other.pk})" in (
        turn.text
    )
    assert "Libres en ese horario: A123BCD (Honda)." in turn.text
    assert _vehicle_of(fleet_rows.job) is None
    assert_no_foreign_data(turn.text)


def test_assign_vehicle_to_the_customers_job_of_the_day_named(
    office: Office, fleet_rows: Fleet, shop: Shop, cast: Cast
) -> None:
    monday = factories.make_job(cast.org, shop.juan, at(MONDAY, 9), technician=shop.carlos)
    turn = office.run(
        assign_vehicle, "assign_vehicle", "fleet", customer="Juan Pérez", date=TUESDAY,
        text="asignale la moto al trabajo de Juan Pérez de mañana",
    )  # fmt: skip
    assert turn.outcome.success, turn.outcome.error
    assert _vehicle_of(fleet_rows.job) == "A123BCD"
    assert _vehicle_of(monday) is None


def test_a_vehicle_already_on_the_job_is_not_reported_busy(
    office: Office, fleet_rows: Fleet
) -> None:
    job = fleet_rows.job
    job.vehicle = fleet_rows.kangoo
    job.save()
    turn = office.run(
        assign_vehicle, "assign_vehicle", "fleet", text="asignale la kangoo al trabajo de Juan",
        customer="Juan Pérez",
    )  # fmt: skip
    assert turn.outcome.success, turn.outcome.error
    assert _vehicle_of(job) == "AB123CD"


def test_assign_vehicle_without_a_job_asks(office: Office, fleet_rows: Fleet) -> None:
    turn: Turn = office.run(assign_vehicle, "assign_vehicle", "fleet", text="asigná la AB123CD")
    assert turn.outcome.error == "missing job" and turn.tools == []


def test_dates_are_in_the_organisations_timezone(office: Office, shop: Shop, cast: Cast) -> None:
    # 23:30 in Buenos Aires is already Tuesday in UTC: still Monday's job.
    late = at(MONDAY, 16)
    factories.make_job(cast.org, shop.juan, late, technician=shop.carlos)
    office.now = datetime.datetime.combine(MONDAY, datetime.time(23, 30), tzinfo=late.tzinfo)
    turn = office.run(technician_sick, "technician_sick", "fleet", technician="Carlos")
    assert "hoy, lunes 23/11" in turn.text
