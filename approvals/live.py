"""The live queue: every manager's open page of the organisation hears of each change.

Group `approvals.o<organisation id>` carries `{"type": "approvals.changed", "action": id,
"status": status}`; the socket (approvals/consumers.py) adds the organisation's pending count
and passes it on, and the page refreshes the rows it shows. What the message says is always
readable from the database too: a page that missed it is right on its next load.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from approvals.models import PendingAction
from common.sockets import send_to_group

GROUP_MESSAGE = "approvals.changed"
# An emergency ticket was opened: every manager's open page shows it at once (static/js/alerts.js).
EMERGENCY_MESSAGE = "approvals.emergency"


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


def notify_emergency(
    *, organisation_id: int, ticket_id: int, summary: str, conversation_id: int | None
) -> None:
    """Tell the organisation's managers, live, that an urgent ticket was opened — once the
    ticket is committed (a rolled-back turn opened nothing). The ticket list has it anyway."""
    message = {
        "type": EMERGENCY_MESSAGE,
        "ticket": int(ticket_id),
        "summary": summary[:200],
        "conversation": conversation_id,
    }
    transaction.on_commit(lambda: send_to_group(group_name(organisation_id), message))
