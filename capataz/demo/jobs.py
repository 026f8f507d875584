"""Demo jobs from five weeks ago to four weeks ahead, each with its history.

Jobs are laid out technician by technician and day by day inside the technician's hours, one
after another with travel time between them, so no technician is ever booked twice at once.
"""

from __future__ import annotations

import datetime
from datetime import timedelta

from business.models import Job, JobEvent, Technician
from capataz.demo import data
from capataz.demo.context import SeedContext

PAST_DAYS = 35
FUTURE_DAYS = 28
TRAVEL_MINUTES = (30, 45, 60, 90)
SATURDAY, SUNDAY = 5, 6
Status = Job.Status


def _window(
    ctx: SeedContext, tech: Technician, day: datetime.date
) -> tuple[datetime.datetime, datetime.datetime] | None:
    """When `tech` can take jobs on `day`, or None when they are off or absent."""
    if day.weekday() not in tech.work_days:
        return None
    if ctx.absence and ctx.absence[0] == tech.pk and ctx.absence[1] <= day <= ctx.absence[2]:
        return None
    start, end = tech.work_start, tech.work_end
    if day.weekday() == SATURDAY:  # Saturdays follow the office's short hours.
        start, end = max(start, datetime.time(9)), min(end, datetime.time(13))
    return ctx.at(day, start), ctx.at(day, end)


def _how_many(ctx: SeedContext, day: datetime.date, offset: int) -> int:
    choices = ctx.rng.choices
    if day.weekday() == SUNDAY:
        count = 1 if ctx.rng.random() < 0.35 else 0  # on-call emergencies only
    elif day.weekday() == SATURDAY:
        count = choices((0, 1, 2), (3, 4, 2))[0]
    elif offset <= 7:
        count = choices((0, 1, 2), (4, 5, 2))[0]
    elif offset <= 14:  # the board fills up as the dates get closer
        count = choices((0, 1, 2), (6, 4, 1))[0]
    else:
        count = choices((0, 1, 2), (8, 3, 1))[0]
    # Today always has work on the board, whatever day the demo is loaded.
    return max(count, 2) if offset == 0 else count


def _pick_service(ctx: SeedContext, tech: Technician, sunday: bool) -> data.ServiceSpec | None:
    options = [
        s
        for s in data.SERVICES
        if s.skill in tech.skills and (not sunday or s.label in data.EMERGENCY_SERVICES)
    ]
    if not options:
        return None
    return ctx.rng.choices(options, [s.weight for s in options])[0]


def _status(ctx: SeedContext, start: datetime.datetime, end: datetime.datetime) -> str:
    if end <= ctx.now:
        return Status.CANCELLED if ctx.rng.random() < 0.07 else Status.DONE
    if start <= ctx.now:
        return Status.IN_PROGRESS
    return Status.CANCELLED if ctx.rng.random() < 0.04 else Status.SCHEDULED


def _created_at(ctx: SeedContext, start: datetime.datetime, urgent: bool) -> datetime.datetime:
    if urgent:  # the on-call phone rang an hour or three before
        booked = start - timedelta(hours=ctx.rng.randint(1, 3))
        return min(booked, ctx.now - timedelta(minutes=ctx.rng.randint(10, 60)))
    day = start.astimezone(ctx.tz).date() - timedelta(days=ctx.rng.randint(1, 12))
    return ctx.office_moment(day)


def _job(
    ctx: SeedContext, tech: Technician, spec: data.ServiceSpec, start: datetime.datetime
) -> Job:
    rng = ctx.rng
    nearby = ctx.customers_in(tech.zone) if rng.random() < 0.8 else []
    customer = rng.choice(nearby or ctx.customers)
    end = start + timedelta(minutes=spec.minutes)
    urgent = start.astimezone(ctx.tz).weekday() == SUNDAY
    note = "Guardia de fin de semana: urgencia." if urgent else ""
    if not urgent and rng.random() < 0.25:
        note = rng.choice(data.JOB_NOTES)
    vehicle = ctx.vehicle_of.get(tech.pk)
    job = Job(
        organisation=ctx.org,
        customer=customer,
        address=ctx.primary_address[customer.pk],
        service=spec.label,
        skill=spec.skill,
        status=_status(ctx, start, end),
        scheduled_start=start,
        scheduled_end=end,
        technician=tech,
        vehicle=vehicle,
        notes=note,
        created_at=_created_at(ctx, start, urgent),
    )
    if job.status == Status.DONE:
        finished = end + timedelta(minutes=rng.randint(-20, 25))
        job.completed_at = min(max(finished, start + timedelta(minutes=30)), ctx.now)
    return job


def _plan_day(ctx: SeedContext, tech: Technician, day: datetime.date, offset: int) -> None:
    window = _window(ctx, tech, day)
    if window is None:
        return
    cursor = window[0] + timedelta(minutes=ctx.rng.choice((0, 0, 30, 60)))
    for _ in range(_how_many(ctx, day, offset)):
        spec = _pick_service(ctx, tech, day.weekday() == SUNDAY)
        if spec is None or cursor + timedelta(minutes=spec.minutes) > window[1]:
            return
        job = _job(ctx, tech, spec, cursor)
        ctx.jobs.append(job)
        ctx.job_specs.append(spec)
        cursor = job.scheduled_end + timedelta(minutes=ctx.rng.choice(TRAVEL_MINUTES))


def _iso(moment: datetime.datetime, ctx: SeedContext) -> str:
    return moment.astimezone(ctx.tz).isoformat(timespec="minutes")


def _between(
    ctx: SeedContext, start: datetime.datetime, end: datetime.datetime
) -> datetime.datetime:
    """An office-hours moment after `start` and no later than `end` (`end` if none fits)."""
    first, last = start.astimezone(ctx.tz).date(), end.astimezone(ctx.tz).date()
    day = first + timedelta(days=ctx.rng.randint(0, (last - first).days))
    moment = ctx.office_moment(day)
    return min(max(moment, start + timedelta(minutes=5)), end)


def _booking_events(ctx: SeedContext, job: Job, first_start: str) -> list[JobEvent]:
    def event(kind: str, minutes: int, **data: object) -> JobEvent:
        at = job.created_at + timedelta(minutes=minutes)
        return JobEvent(
            organisation=ctx.org, job=job, kind=kind, actor=ctx.operator, data=data, at=at
        )

    events = [event(JobEvent.Kind.CREATED, 0, service=job.service, start=first_start)]
    if job.technician is not None:
        events.append(
            event(
                JobEvent.Kind.ASSIGNED,
                1,
                technician_id=job.technician.pk,
                technician=job.technician.name,
            )
        )
    if job.vehicle is not None:
        events.append(
            event(JobEvent.Kind.VEHICLE, 2, vehicle_id=job.vehicle.pk, plate=job.vehicle.plate)
        )
    return events


def _reschedule_event(ctx: SeedContext, job: Job) -> JobEvent | None:
    """One job in ten was moved by a week, to the same weekday and time (so a working day)."""
    # A cancelled job keeps a plain history: booked, then cancelled.
    if ctx.rng.random() >= 0.1 or job.status == Status.CANCELLED:
        return None
    week = timedelta(days=7)
    postponed = job.scheduled_start - week - job.created_at > timedelta(days=1)
    first = job.scheduled_start - week if postponed else job.scheduled_start + week
    latest = min(first, job.scheduled_start, ctx.now)
    if latest <= job.created_at:
        return None
    note = "El cliente pidió pasarlo una semana." if postponed else "El cliente pidió adelantarlo."
    return JobEvent(
        organisation=ctx.org,
        job=job,
        kind=JobEvent.Kind.RESCHEDULED,
        actor=ctx.operator,
        data={"from": _iso(first, ctx), "to": _iso(job.scheduled_start, ctx)},
        note=note,
        at=_between(ctx, job.created_at, latest),
    )


def _status_events(ctx: SeedContext, job: Job) -> list[JobEvent]:
    def change(old: str, new: str, at: datetime.datetime) -> JobEvent:
        return JobEvent(
            organisation=ctx.org,
            job=job,
            kind=JobEvent.Kind.STATUS,
            data={"from": old, "to": new},
            at=at,
        )

    started = job.scheduled_start + timedelta(minutes=ctx.rng.randint(0, 15))
    if job.status == Status.IN_PROGRESS:
        return [change(Status.SCHEDULED, Status.IN_PROGRESS, min(started, ctx.now))]
    if job.status == Status.DONE and job.completed_at is not None:
        return [
            change(Status.SCHEDULED, Status.IN_PROGRESS, min(started, job.completed_at)),
            change(Status.IN_PROGRESS, Status.DONE, job.completed_at),
        ]
    if job.status == Status.CANCELLED:
        reason = ctx.rng.choice(data.CANCEL_REASONS)
        at = _between(ctx, job.created_at, min(job.scheduled_start, ctx.now))
        return [
            JobEvent(
                organisation=ctx.org,
                job=job,
                kind=JobEvent.Kind.CANCELLED,
                actor=ctx.operator,
                data={"reason": reason},
                note=reason,
                at=at,
            )
        ]
    return []


def seed_jobs(ctx: SeedContext) -> int:
    """Plan, save and give a history to every demo job; returns how many events were written."""
    for offset in range(-PAST_DAYS, FUTURE_DAYS + 1):
        day = ctx.today + timedelta(days=offset)
        for tech in ctx.technicians:
            _plan_day(ctx, tech, day, offset)
    events: list[JobEvent] = []
    for job in ctx.jobs:
        moved = _reschedule_event(ctx, job)
        first_start = moved.data["from"] if moved else _iso(job.scheduled_start, ctx)
        history = _booking_events(ctx, job, first_start)
        history += ([moved] if moved else []) + _status_events(ctx, job)
        history.sort(key=lambda e: e.at)
        job.updated_at = history[-1].at
        events += history
    Job.objects.bulk_create(ctx.jobs)
    JobEvent.objects.bulk_create(events)
    return len(events)
