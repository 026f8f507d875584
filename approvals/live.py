"""The live queue: every manager's open page of the organisation hears of each change.

Group `approvals.o<organisation id>` carries `{"type": "approvals.changed", "action": id,
"status": status}`; the socket (approvals/consumers.py) adds the organisation's pending count
and passes it on, and the page refreshes the rows it shows. What the message says is always
readable from the database too: a page that missed it is right on its next load.
"""

from __future__ import annotations

from django.db.models import Q
from django.utils import timezone

from approvals.models import PendingAction

GROUP_MESSAGE = "approvals.changed"


def group_name(organisation_id: int) -> str:
    return f"approvals.o{int(organisation_id)}"


def pending_count(organisation_id: int) -> int:
    """Actions of the organisation a manager can still decide (not yet past their expiry)."""
    now = timezone.now()
    return PendingAction.objects.filter(
        Q(expires_at__isnull=True) | Q(expires_at__gt=now),
        organisation_id=organisation_id,
        status=PendingAction.Status.PENDING,
    ).count()
