"""Tools of the proactive agent: work worth offering before anyone asks; their typed results
(agents/results.py)."""

from __future__ import annotations

import datetime
from dataclasses import asdict, dataclass

from django.utils.translation import gettext_noop

from agents.context import TurnContext
from agents.payloads import CustomerRow, EquipmentRow, customer_row, equipment_row
from agents.registry import Category, ToolError, ToolResult, done, get_scoped, tool
from agents.results import Result
from business import selectors, services
from business.models import Job

LIST_LIMIT = 50
MAX_WITHIN_DAYS = 365
MAX_FOLLOW_UP_DAYS = 90


@dataclass(frozen=True)
class DueEquipment(EquipmentRow):
    customer: CustomerRow
    due_on: datetime.date
    days_overdue: int  # negative: due in that many days


@dataclass(frozen=True)
class MaintenanceDue(Result):
    equipment: tuple[DueEquipment, ...]  # most overdue first, at most LIST_LIMIT
    total: int
    overdue: int
    truncated: bool


@dataclass(frozen=True)
class FollowUp(Result):
    job_id: int
    service: str
    skill: str
    completed_at: datetime.datetime | None  # on the organisation's clock
    technician: str | None
    customer: CustomerRow


@dataclass(frozen=True)
class FollowUps(Result):
    jobs: tuple[FollowUp, ...]  # oldest first, at most LIST_LIMIT
    total: int
    truncated: bool


@dataclass(frozen=True)
class Target(EquipmentRow):
    customer: CustomerRow
    never_serviced: bool


@dataclass(frozen=True)
class SeasonalTargets(Result):
    campaign: str | None  # "summer_ac", "winter_heating"; None out of season
    season: str
    today: datetime.date
    equipment: tuple[Target, ...]
    total: int
    truncated: bool


@dataclass(frozen=True)
class FollowUpRecorded(Result):
    job_id: int
    event_id: int


@tool(
    category=Category.SAFE,
    description=gettext_noop(
        "Equipment due for maintenance: the next service date is past or within the coming "
        "days; most overdue first. Customers who already have a job of that trade booked are "
        "left out."
    ),
    param_docs={"within_days": "Include what falls due within this many days (default 30)."},
)
def maintenance_due_list(ctx: TurnContext, *, within_days: int = 30) -> ToolResult:
    if not 0 <= within_days <= MAX_WITHIN_DAYS:
        raise ToolError(f"within_days must be between 0 and {MAX_WITHIN_DAYS}")
    due = selectors.maintenance_due(ctx.organisation, on=ctx.today, within_days=within_days)
    rows = tuple(
        DueEquipment(
            **asdict(equipment_row(item.equipment)), customer=customer_row(item.equipment.customer),
            due_on=item.due_on, days_overdue=item.days_overdue,
        )
        for item in due[:LIST_LIMIT]
    )  # fmt: skip
    overdue = sum(1 for item in due if item.days_overdue > 0)
    return done(
        f"{len(due)} due, {overdue} overdue",
        MaintenanceDue(rows, total=len(due), overdue=overdue, truncated=len(due) > len(rows)),
    )


@tool(
    category=Category.SAFE,
    description=gettext_noop(
        "Jobs finished recently that nobody has followed up yet (a call to ask how it went), "
        "the oldest first."
    ),
    param_docs={"days": "How far back to look, in days (default 14)."},
)
def follow_up_list(ctx: TurnContext, *, days: int = 14) -> ToolResult:
    if not 1 <= days <= MAX_FOLLOW_UP_DAYS:
        raise ToolError(f"days must be between 1 and {MAX_FOLLOW_UP_DAYS}")
    jobs = selectors.recently_completed_jobs(ctx.organisation, days=days, now=ctx.now)
    total = jobs.count()
    rows = tuple(
        FollowUp(
            job_id=job.pk, service=job.service, skill=job.skill,
            completed_at=ctx.local(job.completed_at) if job.completed_at else None,
            technician=job.technician.name if job.technician else None,
            customer=customer_row(job.customer),
        )
        for job in jobs[:LIST_LIMIT]
    )  # fmt: skip
    return done(f"{total} jobs to follow up", FollowUps(rows, total, truncated=total > len(rows)))


@tool(
    category=Category.SAFE,
    description=gettext_noop(
        "The seasonal campaign of the moment (southern hemisphere: air conditioning before "
        "summer, October–December; heating and gas before winter, March–May) and the "
        "equipment to offer a pre-season service to, never or least recently serviced first."
    ),
)
def seasonal_targets(ctx: TurnContext) -> ToolResult:
    today = ctx.today
    campaign = selectors.seasonal_campaign(today)
    targets = selectors.seasonal_targets(ctx.organisation, today)
    rows = tuple(
        Target(
            **asdict(equipment_row(target.equipment)),
            customer=customer_row(target.equipment.customer),
            never_serviced=target.last_service_on is None,
        )
        for target in targets[:LIST_LIMIT]
    )
    return done(
        f"{campaign or 'no campaign'}: {len(targets)} targets",
        SeasonalTargets(
            campaign=campaign, season=_season(today.month), today=today, equipment=rows,
            total=len(targets), truncated=len(targets) > len(rows),
        ),
    )  # fmt: skip


@tool(
    category=Category.SUGGEST,
    description=gettext_noop(
        "Record that a finished job was followed up (the customer was called to ask how it "
        "went), with what they said; the job leaves the follow-up list."
    ),
    param_docs={"job_id": "The finished job.", "note": "What the customer said."},
)
def follow_up_record(ctx: TurnContext, *, job_id: int, note: str) -> ToolResult:
    job = get_scoped(Job, ctx, job_id, "job")
    event = services.job_follow_up_record(
        organisation=ctx.organisation, job=job, note=note, actor=ctx.user
    )
    return done(
        f"follow-up of job {job.pk} recorded", FollowUpRecorded(job_id=job.pk, event_id=event.pk)
    )


def _season(month: int) -> str:
    """The southern-hemisphere season of a month (meteorological: summer is Dec–Feb)."""
    return ("summer", "autumn", "winter", "spring")[(month % 12) // 3]
