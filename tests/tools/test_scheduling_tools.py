"""Scheduling tools on real rows: slots, finding jobs, booking, moving and cancelling."""

from __future__ import annotations

import datetime

import pytest

from agents.context import TurnContext
from business.models import Job, JobEvent
from tests import factories
from tests.tools.conftest import MONDAY, Shop, at, run

pytestmark = pytest.mark.django_db

TUESDAY = MONDAY + datetime.timedelta(days=1)


def test_slots_find_offers_concrete_slots_nearest_technician_first(
    ctx: TurnContext, shop: Shop
) -> None:
    result = run(ctx, "slots_find", date=MONDAY.isoformat(), skill="ac", zone="Lanús")
    assert result.ok, result.error
    slots = result.data["slots"]
    assert [s["start"] for s in slots] == [
        "2026-11-23T08:00-03:00",
        "2026-11-23T09:00-03:00",
        "2026-11-23T10:00-03:00",
    ]
    # Lanús is in Sur: Carlos (Sur) before Lucía (CABA).
    assert {s["technician"] for s in slots} == {"Carlos Gómez"}
    assert result.data["requested_range_full"] is False
    assert result.summary == "3 slots"


def test_slots_find_respects_time_from_and_count(ctx: TurnContext, shop: Shop) -> None:
    result = run(ctx, "slots_find", date=MONDAY.isoformat(), time_from="14:00", count=2)
    assert [s["start"][11:16] for s in result.data["slots"]] == ["14:00", "15:00"]


def test_a_full_day_gives_the_next_slots_as_alternatives(ctx: TurnContext, shop: Shop) -> None:
    for tech in (shop.carlos, shop.lucia):
        factories.make_absence(ctx.organisation, tech, MONDAY)
    result = run(ctx, "slots_find", date=MONDAY.isoformat(), skill="ac")
    assert result.ok
    assert result.data["requested_range_full"] is True
    assert result.data["slots"][0]["start"] == "2026-11-24T08:00-03:00"
    assert result.summary == "3 slots (alternatives)"


def test_slots_find_without_a_date_looks_from_now(ctx: TurnContext, shop: Shop) -> None:
    result = run(ctx, "slots_find", skill="electrical")
    assert result.data["slots"][0]["start"] == "2026-11-23T08:00-03:00"
    assert result.data["slots"][0]["technician"] == "Pedro Ruiz"


def test_slots_find_rejects_an_absurd_duration(ctx: TurnContext, shop: Shop) -> None:
    result = run(ctx, "slots_find", duration_minutes=5)
    assert not result.ok
    assert "duration_minutes" in result.error


def test_jobs_find_filters_by_customer_name_date_status_and_technician(
    ctx: TurnContext, shop: Shop
) -> None:
    org = ctx.organisation
    mine = factories.make_job(org, shop.juan, at(MONDAY, 9), technician=shop.carlos)
    factories.make_job(org, shop.juan, at(TUESDAY, 9), technician=shop.lucia)
    factories.make_job(
        org, shop.maria, at(MONDAY, 11), technician=shop.carlos, status=Job.Status.CANCELLED
    )
    by_name = run(ctx, "jobs_find", customer="Juan Pérez")
    assert by_name.ok and by_name.data["total"] == 2
    assert by_name.data["jobs"][0]["start"] == "2026-11-24T09:00-03:00"  # newest first
    by_day = run(ctx, "jobs_find", date=MONDAY.isoformat(), status="open")
    assert [j["id"] for j in by_day.data["jobs"]] == [mine.pk]
    by_tech = run(ctx, "jobs_find", technician="carlos", date=MONDAY.isoformat())
    assert by_tech.data["total"] == 2
    week = run(ctx, "jobs_find")
    assert week.data["total"] == 3
    assert week.data["jobs"][0]["technician"] == "Carlos Gómez"
    assert week.data["jobs"][0]["zone"] == "Sur"


def test_jobs_find_reports_an_unknown_customer(ctx: TurnContext, shop: Shop) -> None:
    result = run(ctx, "jobs_find", customer="Nadie Nunca")
    assert not result.ok
    assert result.error == "customer 'Nadie Nunca' not found"


def test_an_ambiguous_name_lists_the_candidates(ctx: TurnContext, shop: Shop) -> None:
    factories.make_customer(ctx.organisation, "Juan Pérez Gil")
    factories.make_customer(ctx.organisation, "Juana Pérez")
    result = run(ctx, "jobs_find", customer="Pérez")
    assert not result.ok
    assert "ambiguous" in result.error
    assert len(result.data["candidates"]) == 3


def test_technicians_free_leaves_out_the_busy_and_absent(ctx: TurnContext, shop: Shop) -> None:
    factories.make_job(ctx.organisation, shop.juan, at(MONDAY, 10), technician=shop.carlos)
    factories.make_absence(ctx.organisation, shop.pedro, MONDAY)
    result = run(ctx, "technicians_free", start=at(MONDAY, 10).isoformat(), zone="Sur")
    assert [t["name"] for t in result.data["technicians"]] == ["Lucía Fernández"]
    assert result.data["technicians"][0]["zone_distance"] == 1


def test_job_book_creates_the_job_with_the_nearest_free_technician(
    ctx: TurnContext, shop: Shop
) -> None:
    result = run(
        ctx,
        "job_book",
        customer_id=shop.juan.pk,
        service="service de aire acondicionado",
        start="2026-11-24T10:00",
    )
    assert result.ok, result.error
    job = Job.objects.get(pk=result.data["job"]["id"])
    assert job.organisation == ctx.organisation
    assert job.technician == shop.carlos
    assert job.skill == "ac"
    assert result.data["job"]["start"] == "2026-11-24T10:00-03:00"
    assert JobEvent.objects.filter(job=job, kind=JobEvent.Kind.CREATED).count() == 1
    assert result.summary == f"job #{job.pk} booked"


def test_job_book_with_a_busy_technician_offers_alternatives(ctx: TurnContext, shop: Shop) -> None:
    factories.make_job(ctx.organisation, shop.maria, at(TUESDAY, 10), technician=shop.carlos)
    before = Job.objects.count()
    result = run(
        ctx,
        "job_book",
        customer="Juan Pérez",
        service="service de split",
        start="2026-11-24T10:00",
        technician="Carlos",
    )
    assert not result.ok
    assert result.data["codes"] == ["technician_busy"]
    assert result.data["alternatives"]
    assert Job.objects.count() == before


def test_job_book_refuses_the_past(ctx: TurnContext, shop: Shop) -> None:
    result = run(
        ctx, "job_book", customer_id=shop.juan.pk, service="service", start="2026-11-20T10:00"
    )
    assert not result.ok
    assert "past" in result.data["codes"]


def test_job_reschedule_with_a_date_keeps_the_time(ctx: TurnContext, shop: Shop) -> None:
    job = factories.make_job(ctx.organisation, shop.juan, at(MONDAY, 15), technician=shop.carlos)
    result = run(ctx, "job_reschedule", job_id=job.pk, date=TUESDAY.isoformat())
    assert result.ok, result.error
    job.refresh_from_db()
    assert job.scheduled_start == at(TUESDAY, 15)
    assert job.scheduled_end == at(TUESDAY, 17)
    assert result.data["before"]["start"] == "2026-11-23T15:00-03:00"


def test_job_reschedule_with_a_time_keeps_the_day(ctx: TurnContext, shop: Shop) -> None:
    job = factories.make_job(ctx.organisation, shop.juan, at(MONDAY, 15), technician=shop.carlos)
    assert run(ctx, "job_reschedule", job_id=job.pk, time="09:30").ok
    job.refresh_from_db()
    assert job.scheduled_start == at(MONDAY, 9, 30)


def test_job_reschedule_needs_a_target(ctx: TurnContext, shop: Shop) -> None:
    job = factories.make_job(ctx.organisation, shop.juan, at(MONDAY, 15), technician=shop.carlos)
    result = run(ctx, "job_reschedule", job_id=job.pk)
    assert not result.ok
    assert result.error == "give start, or date and/or time"


def test_job_cancel_cancels(ctx: TurnContext, shop: Shop) -> None:
    job = factories.make_job(ctx.organisation, shop.juan, at(MONDAY, 15), technician=shop.carlos)
    result = run(ctx, "job_cancel", job_id=job.pk, reason="el cliente viaja")
    assert result.ok
    job.refresh_from_db()
    assert job.status == Job.Status.CANCELLED
    again = run(ctx, "job_cancel", job_id=job.pk)
    assert not again.ok
    assert again.data["codes"] == {"job": "not_open"}


def test_the_outsider_never_reaches_the_first_organisation(
    ctx: TurnContext, outsider_ctx: TurnContext, shop: Shop
) -> None:
    job = factories.make_job(ctx.organisation, shop.juan, at(MONDAY, 15), technician=shop.carlos)
    outsider_runs = [
        ("job_cancel", {"job_id": job.pk}),
        ("job_reschedule", {"job_id": job.pk, "date": TUESDAY.isoformat()}),
        ("jobs_find", {"job_id": job.pk}),
        ("jobs_find", {"customer_id": shop.juan.pk}),
        ("job_book", {"customer_id": shop.juan.pk, "service": "x", "start": "2026-11-24T10:00"}),
        ("slots_find", {"technician_id": shop.carlos.pk}),
    ]
    for name, arguments in outsider_runs:
        result = run(outsider_ctx, name, **arguments)
        assert not result.ok, name
        assert "not found" in result.error, name
    job.refresh_from_db()
    assert job.status == Job.Status.SCHEDULED and job.scheduled_start == at(MONDAY, 15)
    # The outsider's own week shows only their own job, never the first org's.
    theirs = run(outsider_ctx, "jobs_find")
    assert [j["id"] for j in theirs.data["jobs"]] == [shop.foreign_job.pk]
    # And the first organisation does not see the outsider's "Juan Pérez".
    assert run(ctx, "jobs_find", customer_id=shop.foreign_customer.pk).error.endswith("not found")
