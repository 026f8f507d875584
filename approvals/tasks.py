"""The approvals' schedules (installed as django-celery-beat entries: capataz/schedules.py).

Thin: one service call each, idempotent — running one twice, or two at once, changes nothing
more than running it once (every change of status is a conditional update).
"""

from __future__ import annotations

import datetime

from celery import shared_task
from django.conf import settings

from approvals.services import action_expire, actions_abandoned, actions_due, actions_purge


@shared_task(name="approvals.expire_due", ignore_result=True)
def expire_due() -> int:
    """Pending actions past their expiry become *expired* and never run; the conversation that
    asked is told (the `action_changed` receiver enters the expiry there)."""
    return sum(action_expire(action) for action in actions_due())


@shared_task(name="approvals.fail_abandoned", ignore_result=True)
def fail_abandoned() -> int:
    """Actions whose runner died mid-run are marked failed, never run again."""
    minutes = int(getattr(settings, "APPROVALS_ABANDONED_MINUTES", 15))
    return actions_abandoned(older_than=datetime.timedelta(minutes=minutes))


@shared_task(name="approvals.purge_decided", ignore_result=True)
def purge_decided() -> int:
    """Decided actions and their audit trail past the retention period."""
    days = int(getattr(settings, "APPROVALS_RETENTION_DAYS", 180))
    return actions_purge(older_than=datetime.timedelta(days=days))
