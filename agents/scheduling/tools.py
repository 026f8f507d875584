"""Tools of the scheduling agent, and their typed results (agents/results.py)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Literal

from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop

from agents.context import TurnContext
from agents.lookups import resolve_customer, resolve_technician
from agents.payloads import (
    JobRow,
    JobsFound,
    Slot,
    TechnicianRow,
    customer_data,
    customer_link,
    job_data,
    job_link,
    job_relied_on,
    job_row,
    technician_row,
)
from agents.phrasing import when
from agents.registry import (
    Category,
    Preview,
    ToolError,
    ToolResult,
    done,
    get_scoped,
    previews,
    tool,
)
from agents.results import Result
from business import scheduling, services
from business.models import Job
from business.selectors import customer_address, filtered_jobs, scoped
from common.wording import say

JOBS_LIMIT = 30
DEFAULT_DAYS = 7  # without a date, "the jobs" means the coming week
MAX_DAYS = 62

JobStatus = Literal["scheduled", "in_progress", "done", "cancelled", "open"]
SkillName = Literal["ac", "heating", "plumbing", "electrical", "gas"]
DayPart = Literal["morning", "afternoon", "evening"]
MAX_SLOTS = 20
# Service refusals that another time or technician would solve: answer them with alternatives.
AVAILABILITY_CODES = frozenset({"no_technician_free", "technician_busy", "vehicle_busy", "past"})


@dataclass(frozen=True)
class SlotsFound(Result):
    slots: tuple[Slot, ...]
    requested_range_full: bool  # nothing in the range asked: these are the next ones after it
    duration_minutes: int


@dataclass(frozen=True)
class TechniciansFree(Result):
    technicians: tuple[TechnicianRow, ...]
    start: datetime.datetime
    end: datetime.datetime


@dataclass(frozen=True)
class JobBooked(Result):
    job: JobRow


@dataclass(frozen=True)
class JobRescheduled(Result):
    job: JobRow
    before: JobRow


@dataclass(frozen=True)
class JobCancelled(Result):
    job: JobRow


def _days(ctx: TurnContext, day: datetime.date | None, until: datetime.date | None) -> int:
    first = day or ctx.today
    last = until or first
    if last < first:
        raise ToolError("date_to is before date")
    if (last - first).days >= MAX_DAYS:
        raise ToolError(f"a range of at most {MAX_DAYS} days")
    return (last - first).days + 1


def _job_queryset(
    ctx: TurnContext, day: datetime.date | None, until: datetime.date | None, by_customer: bool
) -> QuerySet[Job]:
    if day is None and by_customer:
        # A customer's jobs without a date: their whole history, newest first.
        return (
            scoped(Job, ctx.organisation)
            .select_related("customer", "technician", "address", "vehicle")
            .order_by("-scheduled_start", "-pk")
        )
    days = DEFAULT_DAYS if day is None and until is None else _days(ctx, day, until)
    return filtered_jobs(ctx.organisation, first=day or ctx.today, days=days)


@tool(
    category=Category.SAFE,
    description=gettext_noop(
        "Find jobs (visits) by customer, day or range, status and technician. Without a date: "
        "a customer's whole history, or everyone's jobs of the coming week."
    ),
    param_docs={
        "customer_id": "Only this customer's jobs.",
        "customer": "Only this customer's jobs, by name (when the id is not known).",
        "date": "The day (or the first day of the range), ISO date.",
        "date_to": "The last day of the range, ISO date.",
        "status": "Only jobs in this status; 'open' means scheduled or in progress.",
        "technician_id": "Only this technician's jobs.",
        "technician": "Only this technician's jobs, by name.",
        "job_id": "One job by its id.",
    },
)
def jobs_find(
    ctx: TurnContext,
    *,
    customer_id: int | None = None,
    customer: str | None = None,
    date: datetime.date | None = None,
    date_to: datetime.date | None = None,
    status: JobStatus | None = None,
    technician_id: int | None = None,
    technician: str | None = None,
    job_id: int | None = None,
) -> ToolResult:
    by_customer = customer_id is not None or bool(customer)
    if job_id is not None:
        jobs = scoped(Job, ctx.organisation).filter(pk=job_id)
    else:
        jobs = _job_queryset(ctx, date, date_to, by_customer)
    if by_customer:
        jobs = jobs.filter(customer=resolve_customer(ctx, customer_id, customer))
    if technician_id is not None or technician:
        jobs = jobs.filter(technician=resolve_technician(ctx, technician_id, technician))
    if status == "open":
        jobs = jobs.filter(status__in=Job.OPEN_STATUSES)
    elif status:
        jobs = jobs.filter(status=status)
    total = jobs.count()
    if job_id is not None and total == 0:
        raise ToolError(f"job {job_id} not found")
    shown = tuple(job_row(ctx, job) for job in jobs[:JOBS_LIMIT])
    return done(f"{total} jobs", JobsFound(shown, total, truncated=total > len(shown)))


def _slot(ctx: TurnContext, slot: scheduling.Slot, also_free: tuple[str, ...] = ()) -> Slot:
    return Slot(
        start=ctx.local(slot.start), end=ctx.local(slot.end), technician_id=slot.technician.pk,
        technician=slot.technician.name, technician_zone=slot.technician.zone,
        zone_distance=slot.zone_distance, also_free=also_free,
    )  # fmt: skip


def _distinct_starts(
    slots: list[scheduling.Slot], count: int
) -> list[tuple[scheduling.Slot, tuple[str, ...]]]:
    """One slot per start time with the best-ranked technician (slots come sorted by zone),
    and the names of the others free then."""
    chosen: dict[datetime.datetime, list[scheduling.Slot]] = {}
    for slot in slots:
        if slot.start not in chosen and len(chosen) >= count:
            continue
        chosen.setdefault(slot.start, []).append(slot)
    return [
        (same[0], tuple(other.technician.name for other in same[1:])) for same in chosen.values()
    ]


@tool(
    category=Category.SAFE,
    description=gettext_noop(
        "Concrete free slots (start, end, technician) for a job. With a date or range: the "
        "free slots then; without one, or when that day is full: the next free slots after it "
        "(flagged as alternatives). Technicians closest to the zone come first."
    ),
    param_docs={
        "date": "The day wanted (or the first day of the range), ISO date.",
        "date_to": "The last day of the range, ISO date.",
        "time_from": "Only slots starting at or after this time of day, HH:MM.",
        "part_of_day": (
            "Only slots starting in this part of each day "
            "(morning: before 12; afternoon: 14 to 19; evening: from 19)."
        ),
        "skill": "The trade the job needs.",
        "zone": "The customer's zone or locality, to prefer technicians nearby.",
        "duration_minutes": "How long the job takes, in minutes (default 120).",
        "technician_id": "Only this technician's slots.",
        "count": f"How many slots to offer (default 3, at most {MAX_SLOTS}).",
    },
)
def slots_find(
    ctx: TurnContext,
    *,
    date: datetime.date | None = None,
    date_to: datetime.date | None = None,
    time_from: datetime.time | None = None,
    skill: SkillName | None = None,
    zone: str | None = None,
    duration_minutes: int = 120,
    technician_id: int | None = None,
    count: int = 3,
    part_of_day: DayPart | None = None,
) -> ToolResult:
    if not 15 <= duration_minutes <= 12 * 60:
        raise ToolError("duration_minutes must be between 15 and 720")
    count = max(1, min(count, MAX_SLOTS))
    duration = datetime.timedelta(minutes=duration_minutes)
    technician = resolve_technician(ctx, technician_id, None) if technician_id else None
    first = date or ctx.today
    after = ctx.now
    if time_from is not None:
        after = max(after, ctx.aware(first, time_from))
    slots: list[tuple[scheduling.Slot, tuple[str, ...]]] = []
    if date is not None:
        days = _days(ctx, date, date_to)
        found = scheduling.free_slots(
            ctx.organisation, day_from=first, day_to=first + datetime.timedelta(days=days - 1),
            skill=skill, zone=zone, duration=duration, limit=None, after=after,
            technician=technician, part_of_day=part_of_day,
        )  # fmt: skip
        slots = _distinct_starts(found, count)
        if ctx.customer_id is not None:  # a customer is offered times, not the staff list
            slots = [(slot, ()) for slot, _others in slots]
    alternatives = not slots and date is not None
    if not slots:
        # Nothing in the range asked (or no range): offer the next concrete options after it.
        if date is not None:
            after = max(after, ctx.aware(first + datetime.timedelta(days=days), datetime.time()))
        following = scheduling.next_free_slots(
            ctx.organisation, after=after, skill=skill, zone=zone, duration=duration,
            count=count, technician=technician, part_of_day=part_of_day,
        )  # fmt: skip
        slots = [(slot, ()) for slot in following]
    offered = tuple(_slot(ctx, slot, others) for slot, others in slots)
    return done(
        f"{len(slots)} slots" + (" (alternatives)" if alternatives else ""),
        SlotsFound(offered, alternatives, duration_minutes),
    )


@tool(
    category=Category.SAFE,
    description=gettext_noop(
        "Technicians free for a whole interval, with the trade given; nearest to the zone "
        "first, then the least loaded that day."
    ),
    param_docs={
        "start": "When the work starts, ISO date-time (org's local time if no offset).",
        "end": "When it ends; default start + duration_minutes.",
        "duration_minutes": "Length when no end is given (default 120).",
        "skill": "The trade the job needs.",
        "zone": "The customer's zone or locality.",
    },
)
def technicians_free(
    ctx: TurnContext,
    *,
    start: datetime.datetime,
    end: datetime.datetime | None = None,
    duration_minutes: int = 120,
    skill: SkillName | None = None,
    zone: str | None = None,
) -> ToolResult:
    end = end or start + datetime.timedelta(minutes=duration_minutes)
    if end <= start:
        raise ToolError("end must be after start")
    free = scheduling.technicians_free(ctx.organisation, start, end, skill, zone=zone)
    rows = tuple(technician_row(t, near=zone) for t in free)
    return done(
        f"{len(rows)} technicians free",
        TechniciansFree(rows, start=ctx.local(start), end=ctx.local(end)),
    )


def _alternatives(
    ctx: TurnContext,
    exc: ValidationError,
    *,
    after: datetime.datetime,
    skill: str | None,
    zone: str | None,
    duration: datetime.timedelta,
) -> ToolError:
    """The service's refusal plus the next concrete slots when the problem is availability."""
    codes = {e.code for errors in getattr(exc, "error_dict", {}).values() for e in errors}
    message = " ".join(exc.messages)
    if not codes & AVAILABILITY_CODES:
        return ToolError(message, codes=sorted(codes))
    slots = scheduling.next_free_slots(
        ctx.organisation, after=max(after, ctx.now), skill=skill, zone=zone, duration=duration
    )
    alternatives = [_slot(ctx, s).as_json() for s in slots]  # a failure's data stays JSON
    return ToolError(message, codes=sorted(codes), alternatives=alternatives)


@tool(
    category=Category.SUGGEST,
    # One booking is one customer at one time: a repeat that only picks another technician or
    # words the service differently is the same booking (it does not run twice in a turn).
    target=("customer_id", "customer", "start"),
    description=gettext_noop(
        "Book a job (visit) for a customer at a date and time. Without a technician the "
        "closest free one with the trade is chosen. When nobody is free, the answer carries "
        "the next free slots as alternatives."
    ),
    param_docs={
        "customer_id": "The customer's id.",
        "customer": "The customer's name (when the id is not known).",
        "service": "What the job is, e.g. 'instalación de split' or 'pérdida de gas'.",
        "start": "When it starts, ISO date-time (org's local time if no offset).",
        "duration_minutes": "How long it takes; default from the kind of service.",
        "technician_id": "A specific technician.",
        "technician": "A specific technician, by name.",
        "skill": "The trade; default inferred from the service.",
        "notes": "Notes for the technician.",
        "address": "Where, when not the customer's primary address: one of the customer's own "
        "addresses on file (street and number).",
    },
)
def job_book(
    ctx: TurnContext,
    *,
    customer_id: int | None = None,
    customer: str | None = None,
    service: str,
    start: datetime.datetime,
    duration_minutes: int | None = None,
    technician_id: int | None = None,
    technician: str | None = None,
    skill: SkillName | None = None,
    notes: str | None = None,
    address: str | None = None,
) -> ToolResult:
    who = resolve_customer(ctx, customer_id, customer)
    place = None
    if address:
        place = customer_address(who, address)
        if place is None:
            raise ToolError(
                f"address {address} is not on file for {who.name}",
                address_missing=address,
                customer=customer_data(who),
            )
    tech = None
    if technician_id is not None or technician:
        tech = resolve_technician(ctx, technician_id, technician)
    duration = datetime.timedelta(minutes=duration_minutes) if duration_minutes else None
    try:
        job = services.job_book(
            organisation=ctx.organisation, customer=who, service=service, start=start,
            duration=duration, technician=tech, skill=skill, notes=notes or "",
            actor=ctx.user, now=ctx.now, address=place,
        )  # fmt: skip
    except ValidationError as exc:
        where = place or who.primary_address
        raise _alternatives(
            ctx, exc, after=start, skill=skill or services.infer_skill(service),
            zone=where.zone if where else None,
            duration=duration or services.service_duration(service),
        ) from exc  # fmt: skip
    return done(f"job #{job.pk} booked", JobBooked(job_row(ctx, job)))


def _target_start(
    ctx: TurnContext,
    job: Job,
    start: datetime.datetime | None,
    day: datetime.date | None,
    clock: datetime.time | None,
) -> datetime.datetime:
    """An explicit start, or the job's own day / time with the part that was given replaced."""
    if start is not None:
        return start
    if day is None and clock is None:
        raise ToolError("give start, or date and/or time")
    current = ctx.local(job.scheduled_start)
    return ctx.aware(day or current.date(), clock or current.time().replace(second=0))


@tool(
    category=Category.SUGGEST,
    description=gettext_noop(
        "Move a job to another date and/or time, keeping its length. A date alone keeps the "
        "time and a time alone keeps the day. When the technician cannot make it, the answer "
        "carries alternatives (or reassign_if_busy gives it to the closest free colleague)."
    ),
    param_docs={
        "job_id": "The job to move.",
        "start": "The new start, ISO date-time.",
        "date": "The new day (keeps the time), ISO date.",
        "time": "The new time (keeps the day), HH:MM.",
        "technician_id": "Also change the technician to this one.",
        "reassign_if_busy": "Give the job to another free technician if its own is busy.",
    },
)
def job_reschedule(
    ctx: TurnContext,
    *,
    job_id: int,
    start: datetime.datetime | None = None,
    date: datetime.date | None = None,
    time: datetime.time | None = None,
    technician_id: int | None = None,
    reassign_if_busy: bool = False,
) -> ToolResult:
    job = get_scoped(Job, ctx, job_id, "job")
    target = _target_start(ctx, job, start, date, time)
    tech = resolve_technician(ctx, technician_id, None) if technician_id is not None else None
    before = job_row(ctx, job)
    try:
        services.job_reschedule(
            organisation=ctx.organisation, job=job, start=target, technician=tech,
            reassign_if_busy=reassign_if_busy, actor=ctx.user, now=ctx.now,
        )  # fmt: skip
    except ValidationError as exc:
        raise _alternatives(
            ctx, exc, after=target, skill=job.skill,
            zone=job.address.zone if job.address else None,
            duration=job.scheduled_end - job.scheduled_start,
        ) from exc  # fmt: skip
    return done(f"job #{job.pk} rescheduled", JobRescheduled(job_row(ctx, job), before=before))


@tool(
    category=Category.EXECUTE,
    description=gettext_noop("Cancel an open job (needs a manager's approval)."),
    param_docs={"job_id": "The job to cancel.", "reason": "Why it is cancelled."},
)
def job_cancel(ctx: TurnContext, *, job_id: int, reason: str | None = None) -> ToolResult:
    job = get_scoped(Job, ctx, job_id, "job")
    services.job_cancel(organisation=ctx.organisation, job=job, reason=reason or "", actor=ctx.user)
    return done(f"job #{job.pk} cancelled", JobCancelled(job_row(ctx, job)))


@previews(job_cancel)
def _job_cancel_preview(ctx: TurnContext, *, job_id: int, reason: str | None = None) -> Preview:
    job = get_scoped(Job, ctx, job_id, "job")
    if job.status not in Job.OPEN_STATUSES:
        raise ToolError(f"job #{job.pk} is {job.status}: nothing to cancel")
    data = job_data(ctx, job)
    why = f" ({reason.strip()})" if reason and reason.strip() else ""

    def summary(language: str) -> str:
        return say(
            language,
            _("Cancel job #%(id)s for %(customer)s (%(service)s, %(when)s)%(why)s"),
            id=job.pk,
            customer=data["customer"],
            service=data["service"],
            when=when(data["start"], language),
            why=why,
        )

    return Preview(
        summary_es=summary("es"),
        summary_en=summary("en"),
        relies_on={"job": job_relied_on(data)},
        links=[job_link(data), customer_link(data)],
    )


@dataclass(frozen=True)
class JobNote(Result):
    """`job_note_add`: the note written on the job's history."""

    job_id: int
    note_id: int


@tool(
    category=Category.SUGGEST,
    description=gettext_noop(
        "A note on a job's history (what a customer's photo showed, a remark)."
    ),
    param_docs={
        "job_id": "The job the note is about.",
        "note": "The note, in a sentence or two.",
        "media_id": "The WhatsApp media the note comes from, if any.",
    },
)
def job_note_add(
    ctx: TurnContext, *, job_id: int, note: str, media_id: int | None = None
) -> ToolResult:
    job = get_scoped(Job, ctx, job_id, "job")
    data = {"whatsapp_media": media_id} if media_id is not None else {}
    event = services.job_note_add(
        organisation=ctx.organisation, job=job, note=note, data=data, actor=ctx.acting_user
    )
    return done(f"note #{event.pk} on job #{job.pk}", JobNote(job_id=job.pk, note_id=event.pk))
