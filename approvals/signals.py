"""`action_changed`: sent for every line of a held action's audit trail (filed, approved,
rejected, refused, expired, executed, failed, stale), inside the transaction that wrote it.

The approvals app decides; it does not know who must hear of it. The chat (copilot/decisions.py)
listens: a decision or an expiry enters the conversation that asked for the action and resumes
its paused turn, and every change reaches the live queue of the organisation's managers.
Receivers that act outside the database do so on commit.
"""

from __future__ import annotations

from django.dispatch import Signal

# kwargs: action (PendingAction), kind (an ApprovalEvent.Kind value)
action_changed = Signal()
