"""Fleet tools on real rows: vehicles, absences, redistribution, bulk moves and dispatch."""

from __future__ import annotations

import datetime

import pytest

from agents.context import TurnContext
from business.models import Absence, Job
from tests import factories
from tests.tools.conftest import MONDAY, NOW, Shop, at, run

pytestmark = pytest.mark.django_db

TUESDAY = MONDAY + datetime.timedelta(days=1)


def test_vehicles_available_shows_free_and_busy(ctx: TurnContext, shop: Shop) -> None:
    job = factories.make_job(ctx.organisation, shop.juan, at(MONDAY, 9), vehicle=shop.van)
    result = run(ctx, "vehicles_available", date=MONDAY.isoformat())
    assert [v["plate"] for v in result.data["available"]] == ["BB222BB"]
    assert result.data["busy"] == [
        {**result.data["busy"][0], "plate": "AA111AA", "job_ids": [job.pk]}
    ]
    later = run(ctx, "vehicles_available", start=at(MONDAY, 14).isoformat())
    assert len(later.data["available"]) == 2


def test_vehicle_assign_prefers_the_technicians_usual_vehicle(ctx: TurnContext, shop: Shop) -> None:
    job = factories.make_job(ctx.organisation, shop.juan, at(MONDAY, 9), technician=shop.carlos)
    result = run(ctx, "vehicle_assign", job_id=job.pk)
    assert result.ok, result.error
    job.refresh_from_db()
    assert job.vehicle == shop.van


def test_vehicle_assign_by_plate_refuses_a_busy_vehicle(ctx: TurnContext, shop: Shop) -> None:
    factories.make_job(ctx.organisation, shop.maria, at(MONDAY, 9), vehicle=shop.pickup)
    job = factories.make_job(ctx.organisation, shop.juan, at(MONDAY, 10), technician=shop.carlos)
    result = run(ctx, "vehicle_assign", job_id=job.pk, plate="bb 222 bb")
    assert not result.ok
    assert result.data["codes"] == {"vehicle": "vehicle_busy"}
    job.refresh_from_db()
    assert job.vehicle is None


def test_technician_absence_record_lists_the_affected_jobs(ctx: TurnContext, shop: Shop) -> None:
    job = factories.make_job(ctx.organisation, shop.juan, at(MONDAY, 9), technician=shop.carlos)
    factories.make_job(ctx.organisation, shop.juan, at(MONDAY, 14), technician=shop.lucia)
    result = run(ctx, "technician_absence_record", technician="Carlos", reason="enfermo")
    assert result.ok, result.error
    absence = Absence.objects.get(pk=result.data["absence"]["id"])
    assert (absence.start_date, absence.end_date) == (MONDAY, MONDAY)
    assert result.data["affected_job_ids"] == [job.pk]
    twice = run(ctx, "technician_absence_record", technician_id=shop.carlos.pk)
    assert not twice.ok
    assert twice.data["codes"] == {"start_date": "already_absent"}


def test_technician_jobs_affected_uses_the_recorded_absence(ctx: TurnContext, shop: Shop) -> None:
    factories.make_absence(ctx.organisation, shop.carlos, TUESDAY, TUESDAY)
    factories.make_job(ctx.organisation, shop.juan, at(MONDAY, 9), technician=shop.carlos)
    tuesday_job = factories.make_job(
        ctx.organisation, shop.juan, at(TUESDAY, 9), technician=shop.carlos
    )
    result = run(ctx, "technician_jobs_affected", technician_id=shop.carlos.pk)
    assert result.data["date_from"] == TUESDAY.isoformat()
    assert [j["id"] for j in result.data["jobs"]] == [tuesday_job.pk]


def test_jobs_redistribute_previews_then_applies(ctx: TurnContext, shop: Shop) -> None:
    ac_job = factories.make_job(ctx.organisation, shop.juan, at(MONDAY, 9), technician=shop.carlos)
    heating_job = factories.make_job(
        ctx.organisation, shop.juan, at(MONDAY, 14), technician=shop.carlos, skill="heating"
    )
    preview = run(ctx, "jobs_redistribute", technician="Carlos Gómez", date_from=MONDAY.isoformat())
    assert preview.ok, preview.error
    assert preview.data["dry_run"] is True
    assert [m["to_technician"] for m in preview.data["moved"]] == ["Lucía Fernández"]
    assert [s["job_id"] for s in preview.data["not_moved"]] == [heating_job.pk]
    assert preview.summary == "would move 1 jobs, 1 not moved"
    ac_job.refresh_from_db()
    assert ac_job.technician == shop.carlos  # nothing changed yet
    applied = run(
        ctx, "jobs_redistribute", technician_id=shop.carlos.pk, date_from=MONDAY.isoformat(),
        dry_run=False,
    )  # fmt: skip
    assert applied.ok and applied.data["dry_run"] is False
    ac_job.refresh_from_db()
    assert ac_job.technician == shop.lucia


def test_jobs_bulk_reschedule_moves_a_day(ctx: TurnContext, shop: Shop) -> None:
    org = ctx.organisation
    first = factories.make_job(org, shop.juan, at(MONDAY, 9), technician=shop.carlos)
    second = factories.make_job(org, shop.maria, at(MONDAY, 14), technician=shop.lucia)
    factories.make_job(org, shop.maria, at(MONDAY, 16), technician=shop.lucia, status="cancelled")
    preview = run(ctx, "jobs_bulk_reschedule", date=MONDAY.isoformat(), shift_days=1)
    assert preview.ok, preview.error
    assert preview.data["selected"] == 2
    assert [m["to_start"] for m in preview.data["moved"]] == [
        "2026-11-24T09:00-03:00",
        "2026-11-24T14:00-03:00",
    ]
    first.refresh_from_db()
    assert first.scheduled_start == at(MONDAY, 9)
    applied = run(
        ctx, "jobs_bulk_reschedule", job_ids=[first.pk, second.pk],
        to_date=TUESDAY.isoformat(), dry_run=False,
    )  # fmt: skip
    assert applied.ok
    second.refresh_from_db()
    assert second.scheduled_start == at(TUESDAY, 14)


def test_jobs_bulk_reschedule_by_zone(ctx: TurnContext, shop: Shop) -> None:
    factories.make_job(ctx.organisation, shop.juan, at(MONDAY, 9), technician=shop.carlos)
    factories.make_job(ctx.organisation, shop.maria, at(MONDAY, 14), technician=shop.lucia)
    result = run(
        ctx, "jobs_bulk_reschedule", date=MONDAY.isoformat(), zone="zona sur", shift_days=2
    )
    assert result.data["selected"] == 1
    assert result.data["moved"][0]["customer"] == "Juan Pérez"


def test_jobs_bulk_reschedule_needs_a_selection(ctx: TurnContext, shop: Shop) -> None:
    result = run(ctx, "jobs_bulk_reschedule", shift_days=1)
    assert not result.ok
    assert "say which jobs" in result.error


def test_technicians_nearest_and_dispatch(ctx: TurnContext, shop: Shop) -> None:
    job = factories.make_job(
        ctx.organisation, shop.juan, at(TUESDAY, 15), hours=1, skill="gas", service="fuga de gas"
    )
    nearest = run(ctx, "technicians_nearest", job_id=job.pk, at=at(MONDAY, 9).isoformat())
    assert [t["name"] for t in nearest.data["technicians"]] == ["Lucía Fernández"]
    dispatch_ctx = TurnContext(ctx.organisation, ctx.user, None, NOW.replace(hour=9, minute=2))
    result = run(dispatch_ctx, "technician_dispatch", job_id=job.pk)
    assert result.ok, result.error
    job.refresh_from_db()
    assert job.technician == shop.lucia
    assert job.scheduled_start == at(MONDAY, 9, 5)  # now, on the next 5-minute mark
    assert job.scheduled_end == at(MONDAY, 10, 5)


def test_dispatch_when_nobody_is_free(ctx: TurnContext, shop: Shop) -> None:
    job = factories.make_job(ctx.organisation, shop.juan, at(TUESDAY, 15), skill="gas")
    sunday_night = TurnContext(ctx.organisation, ctx.user, None, NOW.replace(hour=22))
    result = run(sunday_night, "technician_dispatch", job_id=job.pk)
    assert not result.ok
    assert result.error == "no technician with skill gas is free now"


def test_the_outsider_never_reaches_the_first_organisation(
    ctx: TurnContext, outsider_ctx: TurnContext, shop: Shop
) -> None:
    job = factories.make_job(ctx.organisation, shop.juan, at(MONDAY, 9), technician=shop.carlos)
    for name, arguments in [
        ("vehicle_assign", {"job_id": job.pk}),
        ("vehicle_assign", {"job_id": shop.foreign_job.pk, "vehicle_id": shop.van.pk}),
        ("technician_absence_record", {"technician_id": shop.carlos.pk}),
        ("technician_jobs_affected", {"technician_id": shop.carlos.pk}),
        ("jobs_redistribute", {"technician_id": shop.carlos.pk, "dry_run": False}),
        ("jobs_bulk_reschedule", {"job_ids": [job.pk], "shift_days": 1, "dry_run": False}),
        ("technicians_nearest", {"job_id": job.pk}),
        ("technician_dispatch", {"job_id": job.pk}),
    ]:
        result = run(outsider_ctx, name, **arguments)
        assert not result.ok, name
        assert "not found" in result.error, name
    job.refresh_from_db()
    assert (job.technician, job.vehicle, job.scheduled_start) == (shop.carlos, None, at(MONDAY, 9))
    assert not Absence.objects.filter(technician=shop.carlos).exists()
    # The outsider's own day moves only their own job.
    theirs = run(outsider_ctx, "jobs_bulk_reschedule", date=MONDAY.isoformat(), shift_days=1)
    assert theirs.data["selected"] == 1
    assert theirs.data["moved"][0]["job_id"] == shop.foreign_job.pk
    assert [v["plate"] for v in run(outsider_ctx, "vehicles_available").data["available"]] == [
        "ZZ999ZZ"
    ]
    assert Job.objects.get(pk=job.pk).status == Job.Status.SCHEDULED
