"""What each schedule looks for (P1): the records read through business/selectors.py, turned into
proposals — what it is about, why (structured facts, worded later in the reader's language), and
the action as a registry tool call.

A proposal's `subject` (kind + records) and `period` make its dedupe key: the same thing is
proposed once per period (maintenance once per due date, a seasonal call once per campaign and
year, a collection again only when it is a month later), however often the schedule runs.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agents.models import Detector, Suggestion
from business import selectors
from business.models import Equipment, Organisation
from business.scheduling import local_date

Kind, Priority = Suggestion.Kind, Suggestion.Priority

# How far past its waiting time a finished job is still worth a call: a week covers a weekend
# or a missed run without bringing up last month's work.
FOLLOW_UP_WINDOW_DAYS = 7


@dataclass(frozen=True)
class Found:
    kind: str
    records: dict[str, int]
    period: str
    facts: dict[str, Any]
    tool: str
    arguments: dict[str, Any]
    priority: int = Priority.NORMAL

    @property
    def subject(self) -> str:
        about = ",".join(f"{name}={pk}" for name, pk in sorted(self.records.items()))
        return f"{self.kind}:{about}"

    @property
    def dedupe_key(self) -> str:
        return f"{self.subject}:{self.period}"


@dataclass(frozen=True)
class Moment:
    """When a detector looks, on the organisation's clock, and its schedule's number of days."""

    today: datetime.date
    now: datetime.datetime
    days: int


def _equipment(item: Equipment) -> str:
    return " ".join(part for part in (item.kind, item.brand, item.model) if part)


def _service(organisation: Organisation, item: Equipment) -> str:
    """The booking's wording, in the office's language (it goes on the job)."""
    if organisation.language.startswith("en"):
        return f"{item.kind} service"
    return f"Service de {item.kind}"


def _on(day: datetime.date | None) -> str | None:
    return day.isoformat() if day is not None else None


def maintenance(organisation: Organisation, at: Moment) -> list[Found]:
    found = []
    for due in selectors.maintenance_due(organisation, on=at.today, within_days=at.days):
        item = due.equipment
        priority = Priority.HIGH if due.days_overdue > 60 else Priority.NORMAL
        found.append(Found(
            Kind.MAINTENANCE, {"customer": item.customer_id, "equipment": item.pk},
            due.due_on.isoformat(),
            {"customer": item.customer.name, "equipment": _equipment(item),
             "due_on": due.due_on.isoformat(), "days_overdue": due.days_overdue,
             "last_service_on": _on(item.last_service_on)},
            "job_book",
            {"customer_id": item.customer_id, "service": _service(organisation, item),
             "skill": item.skill},
            priority if due.days_overdue >= 0 else Priority.LOW,
        ))  # fmt: skip
    return found


def follow_ups(organisation: Organisation, at: Moment) -> list[Found]:
    """Jobs finished at least `days` days ago (and not more than FOLLOW_UP_WINDOW_DAYS before
    that) that nobody followed up."""
    window = at.days + FOLLOW_UP_WINDOW_DAYS
    jobs = selectors.recently_completed_jobs(organisation, days=window, now=at.now).filter(
        completed_at__lte=at.now - datetime.timedelta(days=at.days)
    )
    found = []
    for job in jobs:
        assert job.completed_at is not None
        completed = local_date(organisation, job.completed_at)
        found.append(Found(
            Kind.FOLLOW_UP, {"customer": job.customer_id, "job": job.pk}, "",
            {"customer": job.customer.name, "service": job.service,
             "completed_on": completed.isoformat(), "days_ago": (at.today - completed).days,
             "technician": job.technician.name if job.technician else ""},
            "follow_up_record", {"job_id": job.pk},
        ))  # fmt: skip
    return found


def seasonal(organisation: Organisation, at: Moment) -> list[Found]:
    found = []
    for target in selectors.seasonal_targets(organisation, at.today):
        item = target.equipment
        found.append(Found(
            Kind.SEASONAL, {"customer": item.customer_id, "equipment": item.pk},
            f"{target.campaign}-{at.today.year}",
            {"customer": item.customer.name, "equipment": _equipment(item),
             "campaign": target.campaign, "last_service_on": _on(target.last_service_on)},
            "job_book",
            {"customer_id": item.customer_id, "service": _service(organisation, item),
             "skill": item.skill},
            Priority.NORMAL if target.last_service_on is None else Priority.LOW,
        ))  # fmt: skip
    return found


def collections(organisation: Organisation, at: Moment) -> list[Found]:
    found = []
    for late in selectors.overdue_invoices(organisation, today=at.today, days=at.days):
        invoice = late.row.invoice
        found.append(Found(
            Kind.COLLECTION, {"customer": invoice.customer_id, "invoice": invoice.pk},
            # A new reminder each further month overdue, not each run.
            f"{late.days_overdue // 30 * 30}d",
            {"customer": invoice.customer.name, "invoice": f"{invoice.letter} {invoice.number}",
             "balance": str(late.row.balance), "due_on": late.due_on.isoformat(),
             "days_overdue": late.days_overdue},
            "payment_status", {"customer_id": invoice.customer_id},
            Priority.HIGH if late.days_overdue >= 60 else Priority.NORMAL,
        ))  # fmt: skip
    return found


def opportunities(organisation: Organisation, at: Moment) -> list[Found]:
    found = []
    for candidate in selectors.replacement_candidates(organisation, today=at.today):
        item = candidate.equipment
        found.append(Found(
            Kind.REPLACEMENT, {"customer": item.customer_id, "equipment": item.pk},
            str(at.today.year),
            {"customer": item.customer.name, "equipment": _equipment(item),
             "age_years": candidate.age_years, "repairs": candidate.repairs},
            "quote_create",
            {"customer_id": item.customer_id, "services": [f"Instalación {item.kind}"]},
        ))  # fmt: skip
    for job in selectors.unquoted_visits(organisation, now=at.now):
        assert job.completed_at is not None
        found.append(Found(
            Kind.QUOTE_MISSING, {"customer": job.customer_id, "job": job.pk}, "",
            {"customer": job.customer.name, "service": job.service,
             "visited_on": local_date(organisation, job.completed_at).isoformat()},
            "quote_create", {"customer_id": job.customer_id, "job_id": job.pk},
            Priority.HIGH,
        ))  # fmt: skip
    for regular in selectors.seasonal_regulars(organisation, at.today):
        customer = regular.customer
        found.append(Found(
            Kind.SEASONAL_REGULAR, {"customer": customer.pk},
            f"{regular.campaign}-{at.today.year}",
            {"customer": customer.name, "campaign": regular.campaign,
             "last_season_year": regular.last_season_year},
            "job_book",
            {"customer_id": customer.pk, "service": _regular_service(regular.skill),
             "skill": regular.skill},
        ))  # fmt: skip
    return found


def _regular_service(skill: str) -> str:
    return {"ac": "Service de split", "heating": "Service de calefacción"}.get(
        skill, "Revisión de artefactos de gas"
    )


DETECTORS: dict[str, Callable[[Organisation, Moment], list[Found]]] = {
    Detector.MAINTENANCE: maintenance,
    Detector.FOLLOW_UPS: follow_ups,
    Detector.SEASONAL: seasonal,
    Detector.COLLECTIONS: collections,
    Detector.OPPORTUNITIES: opportunities,
}

# The suggestion kinds each detector owns: a run expires its own kinds' open suggestions that
# it no longer finds (paid, booked, followed up by other means).
KINDS: dict[str, tuple[str, ...]] = {
    Detector.MAINTENANCE: (Kind.MAINTENANCE,),
    Detector.FOLLOW_UPS: (Kind.FOLLOW_UP,),
    Detector.SEASONAL: (Kind.SEASONAL,),
    Detector.COLLECTIONS: (Kind.COLLECTION,),
    Detector.OPPORTUNITIES: (Kind.REPLACEMENT, Kind.QUOTE_MISSING, Kind.SEASONAL_REGULAR),
}
