"""Writes of the proactive agent: its schedules per organisation, their runs, and the life of a
suggestion (recorded once per period, dismissed or claimed by one conditional update each)."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from agents.models import Detector, ProactiveSchedule, ScheduleRun, Suggestion
from agents.proactive import live
from agents.proactive.detect import DETECTORS, KINDS, Found, Moment
from agents.registry import get_tool, load_tools
from business.models import Organisation
from business.selectors import org_today

logger = logging.getLogger(__name__)

State = Suggestion.State


@dataclass(frozen=True)
class Default:
    hour: int
    minute: int
    weekdays: str
    days: int
    description: str


# Each detector's beat entry, on the organisation's clock; admins change them afterwards.
DEFAULTS: dict[str, Default] = {
    Detector.MAINTENANCE: Default(
        7, 30, "1-5", 30, "Weekdays at 07:30: equipment due for service within `days` days."
    ),
    Detector.FOLLOW_UPS: Default(
        9, 0, "1-5", 3, "Weekdays at 09:00: jobs finished `days` days ago nobody followed up."
    ),
    Detector.SEASONAL: Default(
        8, 0, "1", 0, "Mondays at 08:00: the seasonal campaign's equipment (southern hemisphere)."
    ),
    Detector.COLLECTIONS: Default(
        10, 0, "1-5", 15, "Weekdays at 10:00: invoices overdue by `days` days or more."
    ),
    Detector.OPPORTUNITIES: Default(
        8, 30, "1", 0, "Mondays at 08:30: replacements, prices owed, seasonal regulars."
    ),
}

TASKS: dict[str, str] = {detector: f"proactive.{detector}" for detector in Detector.values}


class ProposalInvalid(ValueError):
    """A proposed action that is no tool call of the registry."""


# --- schedules ----------------------------------------------------------------------------------


def _crontab(schedule: ProactiveSchedule) -> CrontabSchedule:
    crontab, _ = CrontabSchedule.objects.get_or_create(
        minute=str(schedule.minute), hour=str(schedule.hour), day_of_week=schedule.weekdays,
        day_of_month="*", month_of_year="*", timezone=schedule.organisation.timezone,
    )  # fmt: skip
    return crontab


def schedules_install(*, organisation: Organisation) -> list[ProactiveSchedule]:
    """The organisation's detectors and their beat entries, for those it lacks (idempotent:
    what an admin changed stays)."""
    installed = []
    with transaction.atomic():
        for detector, default in DEFAULTS.items():
            schedule, created = ProactiveSchedule.objects.get_or_create(
                organisation=organisation, detector=detector,
                defaults={"hour": default.hour, "minute": default.minute,
                          "weekdays": default.weekdays, "days": default.days},
            )  # fmt: skip
            if created or schedule.periodic_task_id is None:
                schedule.periodic_task = PeriodicTask.objects.create(
                    name=f"proactive: {detector} · {organisation.slug} #{organisation.pk}",
                    task=TASKS[detector], args=json.dumps([organisation.pk]),
                    crontab=_crontab(schedule), description=default.description,
                )  # fmt: skip
                schedule.save(update_fields=["periodic_task"])
            installed.append(schedule)
    return installed


def schedules_install_all(**kwargs: Any) -> None:
    """Every organisation's schedules (a post_migrate receiver: the ones that existed before)."""
    for organisation in Organisation.objects.all():
        schedules_install(organisation=organisation)


def schedule_update(*, schedule: ProactiveSchedule) -> ProactiveSchedule:
    """Save an admin's change and carry it to the beat entry (time, weekdays, enabled)."""
    with transaction.atomic():
        schedule.save()
        task = schedule.periodic_task
        if task is None:
            schedules_install(organisation=schedule.organisation)
            return schedule
        task.crontab = _crontab(schedule)
        task.enabled = schedule.enabled
        task.save()
    return schedule


def schedules_retime(*, organisation: Organisation) -> None:
    """The organisation moved to another timezone: its beat entries follow (same local time)."""
    with transaction.atomic():
        for schedule in ProactiveSchedule.objects.filter(organisation=organisation):
            schedule.organisation = organisation
            schedule_update(schedule=schedule)


# --- runs ---------------------------------------------------------------------------------------


def detector_run(
    *, detector: str, organisation_id: int, trigger: str = "schedule"
) -> ScheduleRun | None:
    """Look once and record it: what was found, what is new, what expired, how long, or the
    error. None when the organisation is gone (a beat entry that outlived it)."""
    organisation = Organisation.objects.filter(pk=organisation_id).first()
    if organisation is None or detector not in DETECTORS:
        # A beat entry that outlived its organisation: it goes too, so beat stops calling.
        logger.info("proactive %s: organisation %s is gone", detector, organisation_id)
        if organisation is None:
            PeriodicTask.objects.filter(
                task__in=TASKS.values(), args=json.dumps([organisation_id])
            ).delete()
        return None
    schedule = ProactiveSchedule.objects.filter(
        organisation=organisation, detector=detector
    ).first()
    days = schedule.days if schedule is not None else DEFAULTS[detector].days
    run = ScheduleRun.objects.create(organisation=organisation, detector=detector, trigger=trigger)
    started = time.perf_counter()
    try:
        at = Moment(today=org_today(organisation), now=timezone.now(), days=days)
        found = DETECTORS[detector](organisation, at)
        with transaction.atomic():
            created, expired = suggestions_record(
                organisation=organisation, run=run, found=found, kinds=KINDS[detector]
            )
        run.status, run.found = ScheduleRun.Status.OK, len(found)
        run.created, run.expired = created, expired
        run.details = _tally(found)
    except Exception as exc:  # recorded, shown to admins; the next run tries again
        logger.exception("proactive %s for organisation %s failed", detector, organisation_id)
        run.status, run.error = ScheduleRun.Status.FAILED, f"{type(exc).__name__}: {exc}"
    run.finished_at = timezone.now()
    run.duration_ms = round((time.perf_counter() - started) * 1000, 2)
    run.save()
    if run.created:
        live.tell(organisation.pk)
    return run


FOUND_LISTED = 200  # subjects kept on a run's row for the admin (the counts are complete)


def _tally(found: list[Found]) -> dict[str, Any]:
    """What a run found, for its row: the count per kind and the subjects themselves."""
    counts: dict[str, int] = {}
    for item in found:
        counts[str(item.kind)] = counts.get(str(item.kind), 0) + 1
    return {"kinds": counts, "found": [item.subject for item in found[:FOUND_LISTED]]}


# --- suggestions --------------------------------------------------------------------------------


def proposal_check(tool: str, arguments: dict[str, Any]) -> None:
    """The proposal names a registry tool and only arguments it takes (the values are
    validated when it runs, through the same gate as the chat)."""
    load_tools()
    try:
        known = get_tool(tool).parameters.get("properties", {})
    except KeyError:
        raise ProposalInvalid(f"no tool {tool!r}") from None
    unknown = sorted(set(arguments) - set(known))
    if unknown:
        raise ProposalInvalid(f"{tool} takes no {', '.join(unknown)}")


def suggestions_record(
    *,
    organisation: Organisation,
    run: ScheduleRun | None,
    found: list[Found],
    kinds: tuple[str, ...],
) -> tuple[int, int]:
    """New suggestions for what was found (once per dedupe key, and never while the same
    subject is still open); open ones of these kinds no longer found expire. (created,
    expired)."""
    mine = Suggestion.objects.filter(organisation=organisation, kind__in=kinds)
    seen = set(mine.filter(dedupe_key__in=[f.dedupe_key for f in found]).values_list(
        "dedupe_key", flat=True
    ))  # fmt: skip
    open_subjects = set(mine.filter(state__in=Suggestion.OPEN_STATES).values_list(
        "subject", flat=True
    ))  # fmt: skip
    # The same action on the same records, already offered by another kind (an air conditioner
    # both due for service and in the summer campaign): one visit is offered, not two.
    offered = {
        _same_action(tool, records)
        for tool, records in Suggestion.objects.filter(
            organisation=organisation, state__in=Suggestion.OPEN_STATES
        )
        .exclude(kind__in=kinds)
        .values_list("tool", "records")
    }
    created = 0
    for item in found:
        if item.dedupe_key in seen or item.subject in open_subjects:
            continue
        if _same_action(item.tool, item.records) in offered:
            continue
        proposal_check(item.tool, item.arguments)
        try:
            with transaction.atomic():
                Suggestion.objects.create(
                    organisation=organisation, kind=item.kind, records=item.records,
                    customer_id=item.records.get("customer"), subject=item.subject,
                    dedupe_key=item.dedupe_key, facts=item.facts, tool=item.tool,
                    arguments=item.arguments, priority=item.priority, run=run,
                )  # fmt: skip
        except IntegrityError:  # a concurrent run recorded it first
            continue
        seen.add(item.dedupe_key)
        open_subjects.add(item.subject)
        created += 1
    still = {item.subject for item in found}
    expired = mine.filter(state=State.NEW).exclude(subject__in=still).update(state=State.EXPIRED)
    return created, expired


def _same_action(tool: str, records: dict[str, Any]) -> str:
    return f"{tool}:{json.dumps(records, sort_keys=True)}"


def suggestion_dismiss(*, suggestion: Suggestion, user: Any, reason: str = "") -> bool:
    """New → dismissed, once (a second click finds it dismissed and changes nothing)."""
    changed = Suggestion.objects.filter(
        pk=suggestion.pk, organisation_id=suggestion.organisation_id, state=State.NEW
    ).update(
        state=State.DISMISSED, acted_by=user, acted_at=timezone.now(),
        dismiss_reason=reason.strip()[:300],
    )  # fmt: skip
    if changed:
        live.tell(suggestion.organisation_id)
    return changed == 1


def suggestion_claim(*, suggestion: Suggestion, user: Any, arguments: dict[str, Any]) -> bool:
    """New → accepted with the arguments it will run with, by one conditional update: of two
    clicks (or two operators) exactly one wins."""
    proposal_check(suggestion.tool, arguments)
    changed = Suggestion.objects.filter(
        pk=suggestion.pk, organisation_id=suggestion.organisation_id, state=State.NEW
    ).update(state=State.ACCEPTED, acted_by=user, acted_at=timezone.now(), arguments=arguments)
    if changed:
        live.tell(suggestion.organisation_id)
    return changed == 1


def suggestion_settle(
    *, suggestion_id: int, organisation_id: int, state: str, outcome: str, **links: Any
) -> None:
    """What came of an accepted suggestion's action: done, or back to new when it could not
    run (the operator may pick another slot); held actions stay accepted."""
    Suggestion.objects.filter(
        pk=suggestion_id, organisation_id=organisation_id, state=State.ACCEPTED
    ).update(state=state, outcome=outcome[:300], **links)
    transaction.on_commit(lambda: live.tell(organisation_id))
