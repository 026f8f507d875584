"""The JSON a fleet, scheduling or proactive tool gives a model, pinned as text on fixed rows
(explicit ids, streets and clock), so its typed result (issue 25.4, agents/results.py) keeps it
byte for byte: the same keys, in the same order, with the same values."""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, replace
from typing import Any

import pytest

from agents.context import TurnContext
from agents.fleet.tools import BulkReschedule, JobsAffected, VehiclesAvailable
from agents.payloads import JobsFound, NearestTechnicians
from agents.proactive.tools import SeasonalTargets
from agents.registry import ToolResult
from agents.scheduling.tools import JobBooked, SlotsFound
from business.models import Absence, Customer, Job, JobEvent, Technician, Vehicle
from tests import factories
from tests.tools.conftest import BA, MONDAY, at, run

pytestmark = pytest.mark.django_db

TUESDAY = MONDAY + datetime.timedelta(days=1)
WEDNESDAY = MONDAY + datetime.timedelta(days=2)


@dataclass
class Fixed:
    # Ids far above any a suite's sequences reach on PostgreSQL (they are not rolled back).
    carlos: Technician  # 900001: AC + heating, Sur, drives the van
    lucia: Technician  # 900002: AC + gas + plumbing, CABA
    juan: Customer  # 900011: Sur
    maria: Customer  # 900012: CABA
    van: Vehicle  # 900021
    pickup: Vehicle  # 900022
    repair: Job  # 900031: Juan, Monday 09-11, Carlos with the van
    install: Job  # 900032: María, Monday 14-16, Lucía
    boiler: Job  # 900033: Juan, Tuesday 10-12, Carlos, heating (nobody else has the trade)
    split: Job  # 900034: María, Tuesday 15-17, Carlos, AC


def _customer(org: Any, pk: int, name: str, zone: str, street: str) -> Customer:
    customer = factories.make_customer(org, name, id=pk, zone=zone, phone="+541145678901")
    customer.addresses.update(street=street)
    return customer


@pytest.fixture
def fixed(ctx: TurnContext) -> Fixed:
    org = ctx.organisation
    carlos = factories.make_technician(org, "Carlos Gómez", id=900001, zone="Sur")
    lucia = factories.make_technician(
        org, "Lucía Fernández", id=900002, skills=["ac", "gas", "plumbing"], zone="CABA"
    )
    juan = _customer(org, 900011, "Juan Pérez", "Sur", "Av. Mitre 100")
    maria = _customer(org, 900012, "María González", "CABA", "Av. Cabildo 3500")
    van = factories.make_vehicle(org, "AA111AA", id=900021, technician=carlos)
    pickup = factories.make_vehicle(org, "BB222BB", id=900022, kind="pickup")
    job = factories.make_job
    return Fixed(
        carlos=carlos, lucia=lucia, juan=juan, maria=maria, van=van, pickup=pickup,
        repair=job(org, juan, at(MONDAY, 9), id=900031, technician=carlos, vehicle=van),
        install=job(
            org, maria, at(MONDAY, 14), id=900032, technician=lucia, service="Instalación de split"
        ),
        boiler=job(
            org, juan, at(TUESDAY, 10), id=900033, technician=carlos, skill="heating",
            service="Service de caldera",
        ),
        split=job(org, maria, at(TUESDAY, 15), id=900034, technician=carlos, skill="ac"),
    )  # fmt: skip


def _text(result: ToolResult) -> str:
    return json.dumps(result.as_dict(), ensure_ascii=False)


def _json(data: dict[str, Any], summary: str) -> str:
    return json.dumps(
        {"ok": True, "data": data, "summary": summary, "error": ""}, ensure_ascii=False
    )


# The rows as the dicts gave them, written out once: a job, a technician, a customer, a vehicle.
CARLOS = {
    "id": 900001,
    "name": "Carlos Gómez",
    "skills": ["ac", "heating"],
    "zone": "Sur",
    "phone": "",
}
LUCIA = {
    "id": 900002,
    "name": "Lucía Fernández",
    "skills": ["ac", "gas", "plumbing"],
    "zone": "CABA",
    "phone": "",
}
JUAN = {
    "id": 900011,
    "name": "Juan Pérez",
    "kind": "person",
    "cuit": "",
    "phone": "+541145678901",
    "email": "",
    "address": "Av. Mitre 100, CABA (Sur)",
    "zone": "Sur",
}
REPAIR = {
    "id": 900031,
    "customer_id": 900011,
    "customer": "Juan Pérez",
    "service": "Service de aire acondicionado",
    "skill": "ac",
    "status": "scheduled",
    "start": "2026-11-23T09:00-03:00",
    "end": "2026-11-23T11:00-03:00",
    "technician_id": 900001,
    "technician": "Carlos Gómez",
    "vehicle_id": 900021,
    "vehicle": "AA111AA",
    "address": "Av. Mitre 100, CABA (Sur)",
    "zone": "Sur",
}
INSTALL = {
    "id": 900032,
    "customer_id": 900012,
    "customer": "María González",
    "service": "Instalación de split",
    "skill": "ac",
    "status": "scheduled",
    "start": "2026-11-23T14:00-03:00",
    "end": "2026-11-23T16:00-03:00",
    "technician_id": 900002,
    "technician": "Lucía Fernández",
    "vehicle_id": None,
    "vehicle": None,
    "address": "Av. Cabildo 3500, CABA",
    "zone": "CABA",
}
BOILER = {
    "id": 900033,
    "customer_id": 900011,
    "customer": "Juan Pérez",
    "service": "Service de caldera",
    "skill": "heating",
    "status": "scheduled",
    "start": "2026-11-24T10:00-03:00",
    "end": "2026-11-24T12:00-03:00",
    "technician_id": 900001,
    "technician": "Carlos Gómez",
    "vehicle_id": None,
    "vehicle": None,
    "address": "Av. Mitre 100, CABA (Sur)",
    "zone": "Sur",
}
SPLIT = {
    "id": 900034,
    "customer_id": 900012,
    "customer": "María González",
    "service": "Service de aire acondicionado",
    "skill": "ac",
    "status": "scheduled",
    "start": "2026-11-24T15:00-03:00",
    "end": "2026-11-24T17:00-03:00",
    "technician_id": 900001,
    "technician": "Carlos Gómez",
    "vehicle_id": None,
    "vehicle": None,
    "address": "Av. Cabildo 3500, CABA",
    "zone": "CABA",
}
PICKUP = {
    "id": 900022,
    "plate": "BB222BB",
    "kind": "pickup",
    "description": "",
    "technician_id": None,
}
VAN = {"id": 900021, "plate": "AA111AA", "kind": "van", "description": "", "technician_id": 900001}


# --- fleet ----------------------------------------------------------------------------------


def test_vehicles_available(ctx: TurnContext, fixed: Fixed) -> None:
    assert _text(run(ctx, "vehicles_available", date=MONDAY)) == _json({
        "available": [{**PICKUP, "technician": None}],
        "busy": [{**VAN, "technician": "Carlos Gómez", "job_ids": [900031]}],
        "start": "2026-11-23T00:00-03:00", "end": "2026-11-24T00:00-03:00",
    }, "1 vehicles available")  # fmt: skip


def test_technician_jobs_affected(ctx: TurnContext, fixed: Fixed) -> None:
    result = run(
        ctx, "technician_jobs_affected", technician_id=900001, date_from=MONDAY, date_to=TUESDAY
    )
    assert _text(result) == _json({
        "technician": CARLOS, "date_from": "2026-11-23", "date_to": "2026-11-24",
        "absence_id": None, "jobs": [REPAIR, BOILER, SPLIT],
    }, "3 jobs affected")  # fmt: skip
    absence = factories.make_absence(ctx.organisation, fixed.carlos, TUESDAY)
    result = run(ctx, "technician_jobs_affected", technician_id=900001)
    assert _text(result) == _json({
        "technician": CARLOS, "date_from": "2026-11-24", "date_to": "2026-11-24",
        "absence_id": absence.pk, "jobs": [BOILER, SPLIT],
    }, "2 jobs affected")  # fmt: skip


def test_technicians_nearest(ctx: TurnContext, fixed: Fixed) -> None:
    result = run(ctx, "technicians_nearest", job_id=900032, at=at(MONDAY, 14))
    assert _text(result) == _json({
        "technicians": [{**LUCIA, "zone_distance": 0}, {**CARLOS, "zone_distance": 1}],
        "zone": "CABA", "skill": "ac", "at": "2026-11-23T14:00-03:00",
    }, "2 technicians free")  # fmt: skip
    # Without a zone there is no distance to tell.
    result = run(ctx, "technicians_nearest", skill="heating", at=at(MONDAY, 14), count=1)
    assert _text(result) == _json(
        {"technicians": [CARLOS], "zone": None, "skill": "heating", "at": "2026-11-23T14:00-03:00"},
        "1 technicians free",
    )


def test_vehicle_assign(ctx: TurnContext, fixed: Fixed) -> None:
    result = run(ctx, "vehicle_assign", job_id=900032, plate="BB 222 BB")
    assert _text(result) == _json(
        {"job": {**INSTALL, "vehicle_id": 900022, "vehicle": "BB222BB"}, "vehicle": PICKUP},
        "vehicle BB222BB assigned to job #900032",
    )


def test_technician_absence_record(ctx: TurnContext, fixed: Fixed) -> None:
    result = run(
        ctx, "technician_absence_record", technician_id=900001, start_date=TUESDAY, reason="enfermo"
    )
    absence = Absence.objects.get(organisation=ctx.organisation)
    assert _text(result) == _json({
        "absence": {
            "id": absence.pk, "technician_id": 900001, "technician": "Carlos Gómez",
            "start_date": "2026-11-24", "end_date": "2026-11-24", "reason": "enfermo",
        },
        "affected_job_ids": [900033, 900034],
    }, f"absence #{absence.pk} recorded, 2 jobs affected")  # fmt: skip


MOVE_SPLIT = {
    "job_id": 900034, "customer": "María González", "service": "Service de aire acondicionado",
    "zone": "CABA", "from_start": "2026-11-24T15:00-03:00", "to_start": "2026-11-24T15:00-03:00",
    "from_technician_id": 900001, "from_technician": "Carlos Gómez", "to_technician_id": 900002,
    "to_technician": "Lucía Fernández",
}  # fmt: skip


def test_jobs_redistribute(ctx: TurnContext, fixed: Fixed) -> None:
    result = run(ctx, "jobs_redistribute", technician_id=900001, date_from=TUESDAY, date_to=TUESDAY)
    assert _text(result) == _json({
        "technician_id": 900001, "date_from": "2026-11-24", "date_to": "2026-11-24",
        "dry_run": True,
        "moved": [MOVE_SPLIT],
        "not_moved": [{
            "job_id": 900033, "customer": "Juan Pérez", "start": "2026-11-24T10:00-03:00",
            "reason": "No hay nadie de ese oficio libre a esa hora.",
        }],
    }, "would move 1 jobs, 1 not moved")  # fmt: skip


def test_jobs_bulk_reschedule(ctx: TurnContext, fixed: Fixed) -> None:
    result = run(ctx, "jobs_bulk_reschedule", date=TUESDAY, shift_days=1, dry_run=False)
    keep = {
        "from_technician_id": 900001, "from_technician": "Carlos Gómez", "to_technician_id": 900001,
        "to_technician": "Carlos Gómez",
    }  # fmt: skip
    assert _text(result) == _json({
        "selected": 2, "dry_run": False,
        "moved": [
            {
                "job_id": 900033, "customer": "Juan Pérez", "service": "Service de caldera",
                "zone": "Sur", "from_start": "2026-11-24T10:00-03:00",
                "to_start": "2026-11-25T10:00-03:00", **keep,
            },
            {
                **MOVE_SPLIT, "from_start": "2026-11-24T15:00-03:00",
                "to_start": "2026-11-25T15:00-03:00", **keep,
            },
        ],
        "not_moved": [],
    }, "moved 2 jobs, 0 not moved")  # fmt: skip


def test_technician_dispatch(ctx: TurnContext, fixed: Fixed) -> None:
    later = TurnContext(ctx.organisation, ctx.user, None, at(MONDAY, 10, 2))
    result = run(later, "technician_dispatch", job_id=900032)
    assert _text(result) == _json({
        "job": {**INSTALL, "start": "2026-11-23T10:05-03:00", "end": "2026-11-23T12:05-03:00"},
        "technician": {**LUCIA, "zone_distance": 0},
    }, "technician #900002 dispatched to job #900032")  # fmt: skip


# --- scheduling -----------------------------------------------------------------------------


def test_jobs_find(ctx: TurnContext, fixed: Fixed) -> None:
    assert _text(run(ctx, "jobs_find", date=MONDAY)) == _json(
        {"jobs": [REPAIR, INSTALL], "total": 2, "truncated": False}, "2 jobs"
    )


def test_slots_find_names_who_else_is_free_to_staff_and_nobody_to_a_customer(
    ctx: TurnContext, fixed: Fixed
) -> None:
    staff = SlotsFound.of(run(ctx, "slots_find", date=WEDNESDAY, skill="ac", count=3))
    customer = replace(ctx, customer_id=900011)
    theirs = SlotsFound.of(run(customer, "slots_find", date=WEDNESDAY, skill="ac", count=3))
    assert staff is not None and theirs is not None
    assert [s.start for s in staff.slots] == [s.start for s in theirs.slots]
    assert any(slot.also_free for slot in staff.slots)
    for slot in staff.slots:
        assert slot.technician not in slot.also_free
    assert all(slot.also_free == () for slot in theirs.slots)


def test_slots_find(ctx: TurnContext, fixed: Fixed) -> None:
    result = run(ctx, "slots_find", date=WEDNESDAY, skill="gas", zone="CABA", count=2)
    lucia = {
        "technician_id": 900002, "technician": "Lucía Fernández", "technician_zone": "CABA",
        "zone_distance": 0, "also_free": [],  # the only gas technician
    }  # fmt: skip
    assert _text(result) == _json({
        "slots": [
            {"start": "2026-11-25T08:00-03:00", "end": "2026-11-25T10:00-03:00", **lucia},
            {"start": "2026-11-25T09:00-03:00", "end": "2026-11-25T11:00-03:00", **lucia},
        ],
        "requested_range_full": False, "duration_minutes": 120,
    }, "2 slots")  # fmt: skip


def test_technicians_free(ctx: TurnContext, fixed: Fixed) -> None:
    result = run(ctx, "technicians_free", start=at(WEDNESDAY, 10), skill="ac", zone="Sur")
    assert _text(result) == _json({
        "technicians": [{**CARLOS, "zone_distance": 0}, {**LUCIA, "zone_distance": 1}],
        "start": "2026-11-25T10:00-03:00", "end": "2026-11-25T12:00-03:00",
    }, "2 technicians free")  # fmt: skip


def test_job_book(ctx: TurnContext, fixed: Fixed) -> None:
    result = run(
        ctx,
        "job_book",
        customer_id=900011,
        service="Service de aire acondicionado",
        start=at(WEDNESDAY, 14),
    )
    job = Job.objects.get(organisation=ctx.organisation, scheduled_start=at(WEDNESDAY, 14))
    booked = {
        **REPAIR, "id": job.pk, "start": "2026-11-25T14:00-03:00", "end": "2026-11-25T16:00-03:00",
        "vehicle_id": None, "vehicle": None,
    }  # fmt: skip
    assert _text(result) == _json({"job": booked}, f"job #{job.pk} booked")


def test_job_reschedule(ctx: TurnContext, fixed: Fixed) -> None:
    result = run(ctx, "job_reschedule", job_id=900034, date=WEDNESDAY)
    moved = {**SPLIT, "start": "2026-11-25T15:00-03:00", "end": "2026-11-25T17:00-03:00"}
    assert _text(result) == _json({"job": moved, "before": SPLIT}, "job #900034 rescheduled")


def test_job_cancel(ctx: TurnContext, fixed: Fixed) -> None:
    result = run(ctx, "job_cancel", job_id=900033, reason="el cliente viaja")
    assert _text(result) == _json(
        {"job": {**BOILER, "status": "cancelled"}}, "job #900033 cancelled"
    )


# --- proactive ------------------------------------------------------------------------------


def _ana(ctx: TurnContext) -> Customer:
    """A customer with no work booked, so their equipment is offered."""
    return _customer(ctx.organisation, 900013, "Ana Díaz", "Norte", "Av. Maipú 200")


ANA = {
    "id": 900013, "name": "Ana Díaz", "kind": "person", "cuit": "", "phone": "+541145678901",
    "email": "", "address": "Av. Maipú 200, CABA (Norte)", "zone": "Norte",
}  # fmt: skip


def test_maintenance_due_list(ctx: TurnContext, fixed: Fixed) -> None:
    ana = _ana(ctx)
    factories.make_equipment(
        ctx.organisation, ana, id=900041, brand="Surrey", model="619", skill="ac",
        installed_on=datetime.date(2020, 1, 5), last_service_on=datetime.date(2025, 9, 10),
    )  # fmt: skip
    assert _text(run(ctx, "maintenance_due_list")) == _json({
        "equipment": [{
            "id": 900041, "customer_id": 900013, "kind": "Split", "skill": "ac", "brand": "Surrey",
            "model": "619", "installed_on": "2020-01-05", "last_service_on": "2025-09-10",
            "next_service_on": "2026-09-10", "customer": ANA, "due_on": "2026-09-10",
            "days_overdue": 74,
        }],
        "total": 1, "overdue": 1, "truncated": False,
    }, "1 due, 1 overdue")  # fmt: skip


def test_follow_up_list(ctx: TurnContext, fixed: Fixed) -> None:
    last_week = at(MONDAY - datetime.timedelta(days=7), 10)
    factories.make_job(
        ctx.organisation, fixed.juan, last_week, id=900035, status="done", completed_at=last_week,
        technician=fixed.lucia,
    )  # fmt: skip
    assert _text(run(ctx, "follow_up_list")) == _json({
        "jobs": [{
            "job_id": 900035, "service": "Service de aire acondicionado", "skill": "ac",
            "completed_at": "2026-11-16T10:00-03:00", "technician": "Lucía Fernández",
            "customer": JUAN,
        }],
        "total": 1, "truncated": False,
    }, "1 jobs to follow up")  # fmt: skip


def test_seasonal_targets(ctx: TurnContext, fixed: Fixed) -> None:
    factories.make_equipment(ctx.organisation, _ana(ctx), id=900042, skill="ac")
    assert _text(run(ctx, "seasonal_targets")) == _json({
        "campaign": "summer_ac", "season": "spring", "today": "2026-11-23",
        "equipment": [{
            "id": 900042, "customer_id": 900013, "kind": "Split", "skill": "ac", "brand": "",
            "model": "", "installed_on": None, "last_service_on": None, "next_service_on": None,
            "customer": ANA, "never_serviced": True,
        }],
        "total": 1, "truncated": False,
    }, "summer_ac: 1 targets")  # fmt: skip


def test_follow_up_record(ctx: TurnContext, fixed: Fixed) -> None:
    saturday = at(MONDAY - datetime.timedelta(days=2), 10)
    done = factories.make_job(ctx.organisation, fixed.juan, saturday, id=900035, status="done")
    result = run(ctx, "follow_up_record", job_id=900035, note="Todo bien")
    event = JobEvent.objects.filter(job=done).latest("pk")
    assert _text(result) == _json(
        {"job_id": 900035, "event_id": event.pk}, "follow-up of job 900035 recorded"
    )


# --- the typed values behind the JSON ---------------------------------------------------------


def test_the_values_are_python_values_on_the_organisations_clock(
    ctx: TurnContext, fixed: Fixed
) -> None:
    found = JobsFound.of(run(ctx, "jobs_find", date=MONDAY))
    assert found is not None and [job.id for job in found.jobs] == [900031, 900032]
    assert found.jobs[0].start == at(MONDAY, 9) and found.jobs[0].start.tzinfo == BA
    slots = SlotsFound.of(run(ctx, "slots_find", date=WEDNESDAY, skill="gas", count=1))
    assert slots is not None and slots.slots[0].start == at(WEDNESDAY, 8)
    nearest = NearestTechnicians.of(
        run(ctx, "technicians_nearest", skill="heating", at=at(MONDAY, 14), count=1)
    )
    assert nearest is not None and nearest.technicians[0].zone_distance is None
    affected = JobsAffected.of(
        run(ctx, "technician_jobs_affected", technician_id=900001, date_from=TUESDAY)
    )
    assert affected is not None and affected.date_to == TUESDAY
    assert [job.id for job in affected.jobs] == [900033, 900034]
    fleet = VehiclesAvailable.of(run(ctx, "vehicles_available", date=MONDAY))
    assert fleet is not None and fleet.busy[0].job_ids == (900031,)
    plan = BulkReschedule.of(run(ctx, "jobs_bulk_reschedule", date=TUESDAY, shift_days=1))
    assert plan is not None and plan.dry_run and plan.moved[0].to_start == at(WEDNESDAY, 10)
    # Another tool's kind, or a failed call, reads as None.
    assert JobsFound.of(run(ctx, "slots_find", date=WEDNESDAY)) is None
    at_night = run(ctx, "job_book", customer_id=900011, service="x", start=at(MONDAY, 3))
    assert not at_night.ok and JobBooked.of(at_night) is None
    targets = SeasonalTargets.of(run(ctx, "seasonal_targets"))
    assert targets is not None and targets.today == MONDAY and targets.campaign == "summer_ac"
