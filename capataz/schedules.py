"""The project's schedules, installed as django-celery-beat entries after `migrate` (this module
is imported from CapatazConfig.ready, which connects `install` to django-celery-beat's
post_migrate: it needs the models).

Each entry is created once with its description (when it runs and what for); from then on it is
the admins' to edit under "Periodic tasks" (time, interval, enabled) — a later `migrate` or a
restart of beat never overwrites their changes. CELERY_BEAT_SCHEDULE stays empty for that
reason: beat would copy it over the rows on every start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.utils import translation
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

StrOrPromise = str | Promise


@dataclass(frozen=True)
class Schedule:
    name: StrOrPromise  # stored in the installation's language (LANGUAGE_CODE)
    task: str
    description: StrOrPromise
    every_seconds: int | None = None
    cron: tuple[str, str] | None = None  # (minute, hour), in CELERY_TIMEZONE


SCHEDULES = (
    Schedule(
        _("copilot: recover stalled turns"),
        "copilot.recover_turns",
        _(
            "Every 10 seconds: a conversation whose runner died (its lease lapsed) or whose queued "
            "turns nobody picked up (the job queue was down) gets a runner."
        ),
        every_seconds=10,
    ),
    Schedule(
        _("copilot: anchor the trace chains"),
        "copilot.anchor_trace_chains",
        _(
            "Every minute: each conversation's chain of sealed turns that grew is vouched for by "
            "an anchor in its organisation's chain (what `verify_trace` holds the seals against)."
        ),
        every_seconds=60,
    ),
    Schedule(
        _("copilot: WhatsApp outbox"),
        "copilot.whatsapp_flush_outbox",
        _(
            "Every 30 seconds: outgoing WhatsApp messages due for an attempt that no job holds "
            "(the job queue was down, a worker died mid-send) get a job."
        ),
        every_seconds=30,
    ),
    Schedule(
        _("copilot: WhatsApp media"),
        "whatsapp.media_sweep",
        _(
            "Every minute: photos and voice notes received that no job fetched (the job queue was "
            "down, a worker died) get a job."
        ),
        every_seconds=60,
    ),
    Schedule(
        _("copilot: purge the event log"),
        "copilot.purge_event_log",
        _(
            "Every day at 03:30: conversation events older than COPILOT_EVENT_LOG_DAYS (what a "
            "reconnecting panel could still ask for) are deleted."
        ),
        cron=("30", "3"),
    ),
    Schedule(
        _("copilot: purge old checkpoints"),
        "copilot.purge_checkpoints",
        _(
            "Every day at 03:40: paused turns older than COPILOT_CHECKPOINT_DAYS, whose held "
            "actions can no longer be decided, lose their checkpoints."
        ),
        cron=("40", "3"),
    ),
    Schedule(
        _("copilot: profiles of idle conversations"),
        "copilot.sweep_idle_conversations",
        _(
            "Every 10 minutes: conversations quiet for half an hour, with something new since "
            "their last extraction and no farewell, get their customers' profiles extracted (once)."
        ),
        every_seconds=600,
    ),
    Schedule(
        _("approvals: expire due actions"),
        "approvals.expire_due",
        _(
            "Every minute: held actions past their expiry become expired, never run, and the "
            "conversation that asked for them is told."
        ),
        every_seconds=60,
    ),
    Schedule(
        _("approvals: fail abandoned runs"),
        "approvals.fail_abandoned",
        _(
            "Every 5 minutes: an approved action whose run was cut off (its process died) for "
            "longer than APPROVALS_ABANDONED_MINUTES is marked failed; it is never run again."
        ),
        every_seconds=300,
    ),
    Schedule(
        _("approvals: purge decided actions"),
        "approvals.purge_decided",
        _(
            "Every day at 03:50: decided actions and their audit trail older than "
            "APPROVALS_RETENTION_DAYS are deleted."
        ),
        cron=("50", "3"),
    ),
)


def install(*, using: str = DEFAULT_DB_ALIAS, **kwargs: Any) -> None:
    """Create the entries that do not exist yet (a post_migrate receiver of django-celery-beat's
    app: `using` is the database just migrated). An existing entry is the admins': left alone."""
    if PeriodicTask._meta.db_table not in connections[using].introspection.table_names():
        return  # django-celery-beat was migrated back to zero: nothing to install into
    # An entry is known by its task: its name is the admins' to change, and is written in the
    # installation's language (an installation that installed it in English keeps that name).
    with transaction.atomic(using=using), translation.override(settings.LANGUAGE_CODE):
        for entry in SCHEDULES:
            if not PeriodicTask.objects.using(using).filter(task=entry.task).exists():
                _create(entry, using)


def _create(entry: Schedule, using: str) -> None:
    fields: dict[str, Any] = {"task": entry.task, "description": str(entry.description)}
    if entry.every_seconds is not None:
        fields["interval"], _ = IntervalSchedule.objects.using(using).get_or_create(
            every=entry.every_seconds, period=IntervalSchedule.SECONDS
        )
    else:
        assert entry.cron is not None
        minute, hour = entry.cron
        fields["crontab"], _ = CrontabSchedule.objects.using(using).get_or_create(
            minute=minute, hour=hour, day_of_week="*", day_of_month="*",
            month_of_year="*", timezone=settings.CELERY_TIMEZONE,
        )  # fmt: skip
    PeriodicTask.objects.using(using).create(name=str(entry.name), **fields)
