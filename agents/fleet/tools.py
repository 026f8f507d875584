"""Tools of the fleet agent: vehicles, absences, redistribution and dispatch; their typed
results (agents/results.py)."""

from __future__ import annotations

import datetime
from dataclasses import asdict, dataclass
from typing import Literal

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop

from agents.context import TurnContext
from agents.lookups import resolve_technician
from agents.payloads import (
    JobRow,
    NearestTechnicians,
    TechnicianRow,
    VehicleRow,
    customer_link,
    job_data,
    job_link,
    job_relied_on,
    job_row,
    technician_row,
    vehicle_row,
)
from agents.phrasing import day, when
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
from agents.results import Result, to_json
from business import scheduling, services
from business.models import Absence, Job, Technician, Vehicle
from business.selectors import local_days, open_jobs, scoped
from common.wording import say

SkillName = Literal["ac", "heating", "plumbing", "electrical", "gas"]
MAX_RANGE_DAYS = 31
MAX_BULK = 200
DISPATCH_ROUNDING = 5  # minutes: "now" is the next 5-minute mark, not 07:03:17


@dataclass(frozen=True)
class FleetVehicle(VehicleRow):
    technician: str | None  # its usual driver's name


@dataclass(frozen=True)
class BusyVehicle(FleetVehicle):
    job_ids: tuple[int, ...]  # the open jobs that hold it then


@dataclass(frozen=True)
class VehiclesAvailable(Result):
    available: tuple[FleetVehicle, ...]
    busy: tuple[BusyVehicle, ...]
    start: datetime.datetime
    end: datetime.datetime


@dataclass(frozen=True)
class JobsAffected(Result):
    technician: TechnicianRow
    date_from: datetime.date
    date_to: datetime.date
    absence_id: int | None  # the recorded absence the range came from
    jobs: tuple[JobRow, ...]


@dataclass(frozen=True)
class VehicleAssigned(Result):
    job: JobRow
    vehicle: VehicleRow


@dataclass(frozen=True)
class AbsenceRow(Result):
    id: int
    technician_id: int
    technician: str
    start_date: datetime.date
    end_date: datetime.date
    reason: str


@dataclass(frozen=True)
class AbsenceRecorded(Result):
    absence: AbsenceRow
    affected_job_ids: tuple[int, ...]


@dataclass(frozen=True)
class Move(Result):
    """A job a plan moves (or moved): when and to whom."""

    job_id: int
    customer: str
    service: str
    zone: str
    from_start: datetime.datetime
    to_start: datetime.datetime
    from_technician_id: int | None
    from_technician: str | None
    to_technician_id: int | None
    to_technician: str | None


@dataclass(frozen=True)
class NotMoved(Result):
    job_id: int
    customer: str
    start: datetime.datetime
    reason: str


@dataclass(frozen=True)
class Redistribution(Result):
    """`jobs_redistribute`: an absent technician's jobs given to colleagues (or the plan)."""

    technician_id: int
    date_from: datetime.date
    date_to: datetime.date
    dry_run: bool
    moved: tuple[Move, ...]
    not_moved: tuple[NotMoved, ...]


@dataclass(frozen=True)
class BulkReschedule(Result):
    """`jobs_bulk_reschedule`: many jobs moved at once (or the plan)."""

    selected: int
    dry_run: bool
    moved: tuple[Move, ...]
    not_moved: tuple[NotMoved, ...]


@dataclass(frozen=True)
class Dispatched(Result):
    job: JobRow
    technician: TechnicianRow


def _window(
    ctx: TurnContext,
    day: datetime.date | None,
    start: datetime.datetime | None,
    end: datetime.datetime | None,
) -> tuple[datetime.datetime, datetime.datetime]:
    if start is not None:
        end = end or start + scheduling.DEFAULT_DURATION
        if end <= start:
            raise ToolError("end must be after start")
        return start, end
    return local_days(ctx.organisation, day or ctx.today, 1)


@tool(
    category=Category.SAFE,
    description=gettext_noop(
        "Active vehicles free on a day (or during an interval), with their usual driver; the "
        "busy ones with the jobs that hold them."
    ),
    param_docs={
        "date": "The day, ISO date (default today).",
        "start": "Start of the interval instead of the whole day, ISO date-time.",
        "end": "End of the interval (default start + 2 hours).",
    },
)
def vehicles_available(
    ctx: TurnContext,
    *,
    date: datetime.date | None = None,
    start: datetime.datetime | None = None,
    end: datetime.datetime | None = None,
) -> ToolResult:
    begins, ends = _window(ctx, date, start, end)
    holding = (
        scoped(Job, ctx.organisation)
        .filter(
            vehicle__isnull=False,
            status__in=Job.OPEN_STATUSES,
            scheduled_start__lt=ends,
            scheduled_end__gt=begins,
        )
        .values_list("vehicle_id", "pk")
    )
    busy: dict[int, list[int]] = {}
    for vehicle_id, job_id in holding:
        busy.setdefault(vehicle_id, []).append(job_id)
    vehicles = scoped(Vehicle, ctx.organisation).filter(active=True).select_related("technician")
    free = tuple(_fleet_vehicle(v) for v in vehicles if v.pk not in busy)
    taken = tuple(
        BusyVehicle(**asdict(_fleet_vehicle(v)), job_ids=tuple(busy[v.pk]))
        for v in vehicles
        if v.pk in busy
    )
    return done(
        f"{len(free)} vehicles available",
        VehiclesAvailable(free, taken, start=ctx.local(begins), end=ctx.local(ends)),
    )


def _fleet_vehicle(vehicle: Vehicle) -> FleetVehicle:
    driver = vehicle.technician
    return FleetVehicle(**asdict(vehicle_row(vehicle)), technician=driver.name if driver else None)


def _absence_range(
    ctx: TurnContext, technician: Technician
) -> tuple[datetime.date, datetime.date, Absence | None]:
    """The current or next absence of the technician; today alone when there is none."""
    absence = (
        scoped(Absence, ctx.organisation)
        .filter(technician=technician, end_date__gte=ctx.today)
        .order_by("start_date", "pk")
        .first()
    )
    if absence is None:
        return ctx.today, ctx.today, None
    return max(absence.start_date, ctx.today), absence.end_date, absence


@tool(
    category=Category.SAFE,
    description=gettext_noop(
        "The open jobs of a technician in a date range — the jobs an absence affects. Without "
        "dates: the range of their current or next recorded absence, else today."
    ),
    param_docs={
        "technician_id": "The technician's id.",
        "technician": "The technician's name (when the id is not known).",
        "date_from": "First day, ISO date.",
        "date_to": "Last day, ISO date (default date_from).",
    },
)
def technician_jobs_affected(
    ctx: TurnContext,
    *,
    technician_id: int | None = None,
    technician: str | None = None,
    date_from: datetime.date | None = None,
    date_to: datetime.date | None = None,
) -> ToolResult:
    tech = resolve_technician(ctx, technician_id, technician)
    absence = None
    if date_from is None:
        date_from, default_to, absence = _absence_range(ctx, tech)
        date_to = date_to or default_to
    date_to = date_to or date_from
    if date_to < date_from:
        raise ToolError("date_to is before date_from")
    if (date_to - date_from).days >= MAX_RANGE_DAYS:
        raise ToolError(f"a range of at most {MAX_RANGE_DAYS} days")
    jobs = open_jobs(ctx.organisation, day=date_from, day_to=date_to, technician=tech)
    return done(
        f"{len(jobs)} jobs affected",
        JobsAffected(
            technician_row(tech), date_from=date_from, date_to=date_to,
            absence_id=absence.pk if absence else None,
            jobs=tuple(job_row(ctx, job) for job in jobs),
        ),
    )  # fmt: skip


@tool(
    category=Category.SAFE,
    description=gettext_noop(
        "The free technicians nearest to a zone (same zone, then neighbouring zones), for a "
        "job or a zone and trade, now or at a given time."
    ),
    param_docs={
        "job_id": "Take zone, trade and duration from this job.",
        "zone": "The zone or locality (when there is no job).",
        "skill": "The trade needed (when there is no job).",
        "at": "When, ISO date-time (default now).",
        "duration_minutes": "How long they are needed (default: the job's length, or 120).",
        "count": "How many technicians to list (default 3).",
    },
)
def technicians_nearest(
    ctx: TurnContext,
    *,
    job_id: int | None = None,
    zone: str | None = None,
    skill: SkillName | None = None,
    at: datetime.datetime | None = None,
    duration_minutes: int | None = None,
    count: int = 3,
) -> ToolResult:
    at = at or ctx.now
    exclude_jobs: list[int] = []
    duration = datetime.timedelta(minutes=duration_minutes or 120)
    job = get_scoped(Job, ctx, job_id, "job") if job_id is not None else None
    if job is not None:
        zone = zone or (job.address.zone if job.address else None)
        skill = skill or job.skill  # type: ignore[assignment]
        if duration_minutes is None:
            duration = job.scheduled_end - job.scheduled_start
        exclude_jobs = [job.pk]
    free = scheduling.technicians_free(
        ctx.organisation, at, at + duration, skill, zone=zone, exclude_job_ids=exclude_jobs
    )
    shown = free[: max(1, min(count, 10))]
    return done(
        f"{len(free)} technicians free",
        NearestTechnicians(
            tuple(technician_row(t, near=zone) for t in shown), zone, skill, ctx.local(at)
        ),
    )


def _moves(
    ctx: TurnContext, report: services.MoveReport
) -> tuple[tuple[Move, ...], tuple[NotMoved, ...]]:
    moved = tuple(
        Move(
            job_id=move.job.pk, customer=move.job.customer.name, service=move.job.service,
            zone=move.job.address.zone if move.job.address else "",
            from_start=ctx.local(move.old_start), to_start=ctx.local(move.new_start),
            from_technician_id=move.old_technician.pk if move.old_technician else None,
            from_technician=move.old_technician.name if move.old_technician else None,
            to_technician_id=move.new_technician.pk if move.new_technician else None,
            to_technician=move.new_technician.name if move.new_technician else None,
        )
        for move in report.moved
    )  # fmt: skip
    stuck = tuple(
        NotMoved(
            job_id=item.job.pk, customer=item.job.customer.name,
            start=ctx.local(item.job.scheduled_start), reason=item.reason,
        )
        for item in report.not_moved
    )  # fmt: skip
    return moved, stuck


def _report_summary(report: services.MoveReport) -> str:
    verb = "would move" if report.dry_run else "moved"
    return f"{verb} {len(report.moved)} jobs, {len(report.not_moved)} not moved"


@tool(
    category=Category.SUGGEST,
    description=gettext_noop(
        "Assign a vehicle to a job. Without a vehicle: the technician's usual vehicle if it "
        "is free, else any free one."
    ),
    param_docs={
        "job_id": "The job.",
        "vehicle_id": "The vehicle's id.",
        "plate": "The vehicle's plate (when the id is not known).",
    },
)
def vehicle_assign(
    ctx: TurnContext, *, job_id: int, vehicle_id: int | None = None, plate: str | None = None
) -> ToolResult:
    job = get_scoped(Job, ctx, job_id, "job")
    if vehicle_id is not None or plate:
        candidates = [_vehicle(ctx, vehicle_id, plate)]
    else:
        active = scoped(Vehicle, ctx.organisation).filter(active=True)
        # The technician's usual vehicles first, then the rest of the fleet.
        candidates = sorted(active, key=lambda v: (v.technician_id != job.technician_id, v.pk))
    refusals: list[str] = []
    for vehicle in candidates:
        try:
            with transaction.atomic():
                services.job_assign_vehicle(
                    organisation=ctx.organisation, job=job, vehicle=vehicle, actor=ctx.user
                )
        except ValidationError as exc:
            if len(candidates) == 1:
                raise
            refusals.append(" ".join(exc.messages))
            continue
        return done(
            f"vehicle {vehicle.plate} assigned to job #{job.pk}",
            VehicleAssigned(job_row(ctx, job), vehicle_row(vehicle)),
        )
    raise ToolError("no vehicle is free for that job", refusals=refusals[:5])


def _vehicle(ctx: TurnContext, vehicle_id: int | None, plate: str | None) -> Vehicle:
    if vehicle_id is not None:
        return get_scoped(Vehicle, ctx, vehicle_id, "vehicle")
    wanted = "".join((plate or "").split()).upper()
    for vehicle in scoped(Vehicle, ctx.organisation):
        if "".join(vehicle.plate.split()).upper() == wanted:
            return vehicle
    raise ToolError(f"vehicle {plate} not found")


@tool(
    category=Category.EXECUTE,
    description=gettext_noop(
        "Record that a technician is absent (sick, leave) from one date to another — needs a "
        "manager's approval. The answer lists the open jobs the absence affects."
    ),
    param_docs={
        "technician_id": "The technician's id.",
        "technician": "The technician's name (when the id is not known).",
        "start_date": "First day absent, ISO date (default today).",
        "end_date": "Last day absent, ISO date (default start_date).",
        "reason": "Why, e.g. 'enfermo'.",
    },
)
def technician_absence_record(
    ctx: TurnContext,
    *,
    technician_id: int | None = None,
    technician: str | None = None,
    start_date: datetime.date | None = None,
    end_date: datetime.date | None = None,
    reason: str | None = None,
) -> ToolResult:
    tech = resolve_technician(ctx, technician_id, technician)
    absence = services.technician_absence_record(
        organisation=ctx.organisation, technician=tech, start_date=start_date or ctx.today,
        end_date=end_date, reason=reason or "", actor=ctx.user,
    )  # fmt: skip
    affected = open_jobs(
        ctx.organisation, day=absence.start_date, day_to=absence.end_date, technician=tech
    )
    row = AbsenceRow(
        id=absence.pk, technician_id=tech.pk, technician=tech.name,
        start_date=absence.start_date, end_date=absence.end_date, reason=absence.reason,
    )  # fmt: skip
    return done(
        f"absence #{absence.pk} recorded, {len(affected)} jobs affected",
        AbsenceRecorded(row, affected_job_ids=tuple(job.pk for job in affected)),
    )


def _absence_for(
    ctx: TurnContext,
    absence_id: int | None,
    technician_id: int | None,
    technician: str | None,
    date_from: datetime.date | None,
    date_to: datetime.date | None,
) -> Absence:
    """The recorded absence, or an unsaved one for the dates given: a redistribution can be
    previewed (and approved) in the same turn as the absence that is still awaiting approval."""
    if absence_id is not None:
        return get_scoped(Absence, ctx, absence_id, "absence")
    tech = resolve_technician(ctx, technician_id, technician)
    if date_from is None:
        date_from, default_to, recorded = _absence_range(ctx, tech)
        if recorded is not None and date_to is None:
            return recorded
        date_to = date_to or default_to
    date_to = date_to or date_from
    if date_to < date_from:
        raise ToolError("date_to is before date_from")
    return Absence(
        organisation=ctx.organisation, technician=tech, start_date=date_from, end_date=date_to
    )


@tool(
    category=Category.BULK,
    description=gettext_noop(
        "Give an absent technician's open jobs to free colleagues with the trade, nearest by "
        "zone, same time. dry_run (default) returns the plan; dry_run=false applies it (needs "
        "a manager's approval). Jobs nobody can take are listed with the reason."
    ),
    param_docs={
        "absence_id": "The recorded absence.",
        "technician_id": "The absent technician (instead of absence_id).",
        "technician": "The absent technician's name.",
        "date_from": "First day to cover, ISO date (default: their current absence, or today).",
        "date_to": "Last day to cover, ISO date.",
        "dry_run": "true: only propose; false: apply.",
    },
)
def jobs_redistribute(
    ctx: TurnContext,
    *,
    absence_id: int | None = None,
    technician_id: int | None = None,
    technician: str | None = None,
    date_from: datetime.date | None = None,
    date_to: datetime.date | None = None,
    dry_run: bool = True,
) -> ToolResult:
    absence = _absence_for(ctx, absence_id, technician_id, technician, date_from, date_to)
    report = services.jobs_redistribute(
        organisation=ctx.organisation, absence=absence, dry_run=dry_run, actor=ctx.user
    )
    moved, stuck = _moves(ctx, report)
    return done(
        _report_summary(report),
        Redistribution(
            technician_id=absence.technician_id, date_from=absence.start_date,
            date_to=absence.end_date, dry_run=report.dry_run, moved=moved, not_moved=stuck,
        ),
    )  # fmt: skip


def _jobs_to_move(
    ctx: TurnContext,
    job_ids: list[int] | None,
    day: datetime.date | None,
    date_to: datetime.date | None,
    technician: Technician | None,
    zone: str | None,
) -> QuerySet[Job]:
    if job_ids:
        jobs = open_jobs(ctx.organisation, technician=technician, zone=zone)
        known = scoped(Job, ctx.organisation).filter(pk__in=job_ids).values_list("pk", flat=True)
        missing = sorted(set(job_ids) - set(known))
        if missing:
            raise ToolError(f"jobs not found: {', '.join(map(str, missing))}")
        return jobs.filter(pk__in=job_ids)
    if day is None:
        raise ToolError("say which jobs: job_ids, or a date (with technician or zone)")
    last = date_to or day
    if last < day or (last - day).days >= MAX_RANGE_DAYS:
        raise ToolError(f"date_to must be after date, at most {MAX_RANGE_DAYS} days")
    return open_jobs(ctx.organisation, day=day, day_to=last, technician=technician, zone=zone)


@tool(
    category=Category.BULK,
    description=gettext_noop(
        "Move many open jobs at once (e.g. all of a day, of a technician or of a zone) by a "
        "number of days or to a date, each keeping its time. dry_run (default) returns the "
        "plan; dry_run=false applies it (needs a manager's approval). Jobs that cannot move are "
        "listed with the reason."
    ),
    param_docs={
        "job_ids": "The jobs to move (instead of a date).",
        "date": "Move the jobs of this day (first day of a range), ISO date.",
        "date_to": "Last day of the range, ISO date.",
        "technician_id": "Only this technician's jobs.",
        "technician": "Only this technician's jobs, by name.",
        "zone": "Only the jobs in this zone.",
        "shift_days": "Move by this many days (negative: earlier).",
        "to_date": "Move to this day instead, ISO date.",
        "reassign_if_busy": "If a technician cannot make the new time, give the job to another "
        "free one (default true).",
        "dry_run": "true: only propose; false: apply.",
    },
)
def jobs_bulk_reschedule(
    ctx: TurnContext,
    *,
    job_ids: list[int] | None = None,
    date: datetime.date | None = None,
    date_to: datetime.date | None = None,
    technician_id: int | None = None,
    technician: str | None = None,
    zone: str | None = None,
    shift_days: int | None = None,
    to_date: datetime.date | None = None,
    reassign_if_busy: bool = True,
    dry_run: bool = True,
) -> ToolResult:
    tech = None
    if technician_id is not None or technician:
        tech = resolve_technician(ctx, technician_id, technician)
    jobs = list(_jobs_to_move(ctx, job_ids, date, date_to, tech, zone)[: MAX_BULK + 1])
    if len(jobs) > MAX_BULK:
        raise ToolError(f"more than {MAX_BULK} jobs: narrow the selection")
    report = services.jobs_bulk_reschedule(
        organisation=ctx.organisation, jobs=jobs, shift_days=shift_days, to_date=to_date,
        reassign_if_busy=reassign_if_busy, dry_run=dry_run, actor=ctx.user, now=ctx.now,
    )  # fmt: skip
    moved, stuck = _moves(ctx, report)
    return done(
        _report_summary(report),
        BulkReschedule(selected=len(jobs), dry_run=report.dry_run, moved=moved, not_moved=stuck),
    )


def _round_up(moment: datetime.datetime, minutes: int = DISPATCH_ROUNDING) -> datetime.datetime:
    """The first `minutes` mark at or after `moment` (wall clock)."""
    step = datetime.timedelta(minutes=minutes)
    midnight = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return midnight + -(-(moment - midnight) // step) * step


@tool(
    category=Category.EXECUTE,
    description=gettext_noop(
        "Send a technician to a job now: the job starts now (keeping its length) with the "
        "nearest free technician with the trade, or the one given. Needs a manager's approval."
    ),
    param_docs={
        "job_id": "The job to dispatch.",
        "technician_id": "Send this technician instead of the nearest free one.",
    },
)
def technician_dispatch(
    ctx: TurnContext, *, job_id: int, technician_id: int | None = None
) -> ToolResult:
    job = get_scoped(Job, ctx, job_id, "job")
    start = _round_up(ctx.local_now)
    duration = job.scheduled_end - job.scheduled_start
    zone = job.address.zone if job.address else None
    if technician_id is not None:
        chosen = resolve_technician(ctx, technician_id, None)
    else:
        found = scheduling.nearest_free_technician(
            ctx.organisation, zone, job.skill, start, duration=duration, exclude_job_ids=[job.pk]
        )
        if found is None:
            raise ToolError(f"no technician with skill {job.skill} is free now", zone=zone)
        chosen = found
    services.job_reschedule(
        organisation=ctx.organisation, job=job, start=start, technician=chosen,
        actor=ctx.user, now=ctx.now,
    )  # fmt: skip
    return done(
        f"technician #{chosen.pk} dispatched to job #{job.pk}",
        Dispatched(job_row(ctx, job), technician_row(chosen, near=zone)),
    )


# --- how a held call of these tools reads, and what it relies on ----------------------------


@previews(technician_absence_record)
def _absence_preview(
    ctx: TurnContext,
    *,
    technician_id: int | None = None,
    technician: str | None = None,
    start_date: datetime.date | None = None,
    end_date: datetime.date | None = None,
    reason: str | None = None,
) -> Preview:
    tech = resolve_technician(ctx, technician_id, technician)
    first = start_date or ctx.today
    last = end_date or first
    if last < first:
        raise ToolError("end_date is before start_date")
    affected = list(
        open_jobs(ctx.organisation, day=first, day_to=last, technician=tech).values_list(
            "pk", flat=True
        )
    )
    why = f" ({reason.strip()})" if reason and reason.strip() else ""

    def summary(language: str) -> str:
        span = (
            day(first, language)
            if first == last
            else say(
                language,
                _("from %(first)s to %(last)s"),
                first=day(first, language),
                last=day(last, language),
            )
        )
        return say(
            language,
            _("Record %(name)s as absent %(span)s%(why)s: %(count)d job(s) affected"),
            name=tech.name,
            span=span,
            why=why,
            count=len(affected),
        )

    return Preview(
        summary_es=summary("es"),
        summary_en=summary("en"),
        relies_on={
            "technician": {"id": tech.pk, "active": tech.active},
            "affected_jobs": sorted(affected),
        },
        links=[{"kind": "technician", "id": tech.pk, "label": tech.name}],
    )


def _plan_preview(plan: Redistribution | BulkReschedule, summary: Promise) -> Preview:
    """A bulk tool's own dry run as the description of its held call; `summary` is the
    sentence (a msgid with %(count)d, %(moves)s and %(left)s) said in both languages."""
    moved, not_moved = plan.moved, plan.not_moved
    if not moved:
        raise ToolError(
            "no job would move: " + "; ".join(f"#{item.job_id} {item.reason}" for item in not_moved)
            if not_moved
            else "no job would move"
        )
    stuck = len(not_moved)

    def said(language: str) -> str:
        moves = "; ".join(
            f"#{m.job_id} {m.customer}: {when(m.from_start, language)} → "
            f"{when(m.to_start, language)}"
            for m in moved[:5]
        )
        if len(moved) > 5:
            moves += " " + say(language, _("and %(count)d more"), count=len(moved) - 5)
        left = "; " + say(language, _("%(count)d cannot move"), count=stuck) if stuck else ""
        return say(language, summary, count=len(moved), moves=moves, left=left)

    return Preview(
        summary_es=said("es"),
        summary_en=said("en"),
        # JSON, compared again before the held call runs: the moments as their ISO text.
        relies_on={
            "moves": [
                [
                    m.job_id,
                    to_json(m.from_start),
                    m.from_technician_id,
                    to_json(m.to_start),
                    m.to_technician_id,
                ]
                for m in moved
            ],
            "not_moved": sorted(item.job_id for item in not_moved),
        },  # fmt: skip
        links=[{"kind": "job", "id": m.job_id, "label": f"#{m.job_id}"} for m in moved],
    )


@previews(jobs_redistribute)
def _redistribute_preview(ctx: TurnContext, **arguments: object) -> Preview:
    result = jobs_redistribute(ctx, **{**arguments, "dry_run": True})  # type: ignore[arg-type]
    if (plan := Redistribution.of(result)) is None:
        raise ToolError(result.error)
    return _plan_preview(plan, _("Give to other technicians %(count)d job(s) (%(moves)s)%(left)s"))


@previews(jobs_bulk_reschedule)
def _bulk_reschedule_preview(ctx: TurnContext, **arguments: object) -> Preview:
    result = jobs_bulk_reschedule(ctx, **{**arguments, "dry_run": True})  # type: ignore[arg-type]
    if (plan := BulkReschedule.of(result)) is None:
        raise ToolError(result.error)
    return _plan_preview(plan, _("Move %(count)d job(s) (%(moves)s)%(left)s"))


@previews(technician_dispatch)
def _dispatch_preview(
    ctx: TurnContext, *, job_id: int, technician_id: int | None = None
) -> Preview:
    job = get_scoped(Job, ctx, job_id, "job")
    if job.status not in Job.OPEN_STATUSES:
        raise ToolError(f"job #{job.pk} is {job.status}: nothing to dispatch")
    data = job_data(ctx, job)
    summary = _(
        "Send the nearest free technician now to job #%(id)s for %(customer)s "
        "(%(service)s%(where)s)"
    )
    name = ""
    links = [job_link(data), customer_link(data)]
    if technician_id is not None:
        chosen = resolve_technician(ctx, technician_id, None)
        summary = _("Send %(name)s now to job #%(id)s for %(customer)s (%(service)s%(where)s)")
        name = chosen.name
        links.append({"kind": "technician", "id": chosen.pk, "label": chosen.name})
    where = f", {data['address']}" if data["address"] else ""
    values = {
        "name": name,
        "id": job.pk,
        "customer": data["customer"],
        "service": data["service"],
        "where": where,
    }
    return Preview(
        summary_es=say("es", summary, **values),
        summary_en=say("en", summary, **values),
        relies_on={"job": job_relied_on(data), "technician_id": technician_id},
        links=links,
    )
