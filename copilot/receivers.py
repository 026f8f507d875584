"""What the chat does when something happens elsewhere (connected in CopilotConfig.ready).

`on_action_changed` hears every line of a held action's audit trail (approvals/signals.py):
- an approval, a rejection or an expiry enters the action's conversation like a message — a
  note, a queued decision turn that resumes the paused one, `approval_decided`
  (`turn.accept_decision`) — in the transaction of the decision itself, and the conversation is
  handed to a runner once that commits: the turn is a job like any other;
- every change reaches the organisation's live approvals queue (approvals/live.py).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from approvals import live
from approvals.models import ApprovalEvent, PendingAction
from copilot import eventlog, tasks
from copilot.intake import accept_decision
from copilot.proposals import proposal_settled

Kind = ApprovalEvent.Kind
DECISIONS = frozenset({Kind.APPROVED, Kind.REJECTED, Kind.EXPIRED})
# The ends of a held call: an accepted suggestion waiting on it settles (copilot/proposals.py).
ENDS = frozenset({Kind.EXECUTED, Kind.REJECTED, Kind.EXPIRED, Kind.FAILED, Kind.STALE})


def on_action_changed(sender: Any, action: PendingAction, kind: str, **kwargs: Any) -> None:
    organisation_id, action_id, status = action.organisation_id, action.pk, str(action.status)
    transaction.on_commit(lambda: _tell_queue(organisation_id, action_id, status))
    if kind in ENDS:
        proposal_settled(action)
    if kind not in DECISIONS:
        return
    accepted = accept_decision(action)
    if accepted is not None:
        conversation_id = action.conversation_id
        assert conversation_id is not None
        transaction.on_commit(lambda: tasks.dispatch(organisation_id, conversation_id))


def _tell_queue(organisation_id: int, action_id: int, status: str) -> None:
    """Every open queue page of the organisation: the change and the pending count, counted
    once here rather than by each socket."""
    message = {
        "type": live.GROUP_MESSAGE, "action": action_id, "status": status,
        "pending": live.pending_count(organisation_id),
    }  # fmt: skip
    eventlog.send_to_group(live.group_name(organisation_id), message)
