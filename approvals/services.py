"""Deciding held actions: each one is decided once, runs once or never, and leaves an audit line.

Every change of status is a conditional update from the status it expects — two managers
clicking at once, a double click, a decision racing the expiry: exactly one of them changes the
row, the others learn who did what first. Running the approved call is the chat's job (the turn
that asked for it resumes); this module only moves the row through its states:

    pending ─┬─ approve ─→ approved ─→ executing ─┬─→ executed
             ├─ reject ──→ rejected               ├─→ failed
             └─ expire ──→ expired                └─→ stale (the records changed)
"""

from __future__ import annotations

import datetime
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from approvals.models import ApprovalEvent, PendingAction
from approvals.signals import action_changed
from business.models import Membership, Role
from business.roles import RANK

Status = PendingAction.Status
DECIDED = frozenset({Status.APPROVED, Status.REJECTED})


@dataclass(frozen=True)
class Decided:
    """What a decision came to: `ok`, or why not (`code`) and the row as it now stands."""

    ok: bool
    code: str  # approved, rejected, not_found, forbidden, already_decided, expired
    action: PendingAction | None = None


def snapshot_hash(snapshot: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(snapshot, sort_keys=True, default=str).encode()).hexdigest()


def audit(
    action: PendingAction,
    kind: str,
    *,
    actor: AbstractBaseUser | None = None,
    reason: str = "",
    detail: dict[str, Any] | None = None,
) -> ApprovalEvent:
    line = ApprovalEvent.objects.create(
        organisation_id=action.organisation_id, action=action, kind=kind,
        actor_id=actor.pk if actor is not None else None, actor_name=_name(actor),
        reason=reason[:2000], detail=detail or {},
    )  # fmt: skip
    action_changed.send(sender=PendingAction, action=action, kind=str(kind))
    return line


def _name(user: AbstractBaseUser | None) -> str:
    if user is None:
        return ""
    full = getattr(user, "get_full_name", lambda: "")()
    return str(full or user.get_username())


def may_decide(user: AbstractBaseUser | None, action: PendingAction) -> bool:
    """A member of the action's organisation at or above the role its rules ask for."""
    if user is None or not user.is_authenticated:
        return False
    membership = Membership.objects.filter(
        user_id=user.pk, organisation_id=action.organisation_id
    ).first()
    return may_decide_as(membership, action)


def may_decide_as(membership: Membership | None, action: PendingAction) -> bool:
    """The same rule for a membership already at hand (a page of the queue asks it per row)."""
    if membership is None or membership.organisation_id != action.organisation_id:
        return False
    needed = Role(action.decider_role) if action.decider_role in Role.values else Role.MANAGER
    return RANK[Role(membership.role)] >= max(RANK[needed], RANK[Role.MANAGER])


def action_decide(
    *,
    organisation_id: int,
    action_id: int,
    actor: AbstractBaseUser,
    approve: bool,
    reason: str = "",
    now: datetime.datetime | None = None,
) -> Decided:
    """Approve or reject a pending action of the organisation, once."""
    now = now or timezone.now()
    action = PendingAction.objects.filter(pk=action_id, organisation_id=organisation_id).first()
    if action is None:
        return Decided(False, "not_found")
    if not may_decide(actor, action):
        with transaction.atomic():
            audit(action, ApprovalEvent.Kind.REFUSED, actor=actor, reason=reason)
        return Decided(False, "forbidden", action)
    status = Status.APPROVED if approve else Status.REJECTED
    with transaction.atomic():
        still_pending = PendingAction.objects.filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=now),
            pk=action_id, organisation_id=organisation_id, status=Status.PENDING,
        )  # fmt: skip
        won = still_pending.update(
            status=status, decided_by=actor, decided_at=now, decision_reason=reason[:2000]
        )
        action.refresh_from_db()
        if won == 1:
            audit(action, str(status), actor=actor, reason=reason)
            return Decided(True, str(status), action)
    if action.status == Status.PENDING:  # it was still pending: its time ran out
        action_expire(action, now=now)
        return Decided(False, "expired", action)
    code = "expired" if action.status == Status.EXPIRED else "already_decided"
    return Decided(False, code, action)


def action_expire(action: PendingAction, *, now: datetime.datetime | None = None) -> bool:
    """Expire one pending action whose time ran out; False when it was decided first."""
    now = now or timezone.now()
    with transaction.atomic():
        expired = PendingAction.objects.filter(
            pk=action.pk, status=Status.PENDING, expires_at__lte=now
        ).update(status=Status.EXPIRED, decided_at=now)
        if expired == 1:
            action.refresh_from_db()
            audit(action, ApprovalEvent.Kind.EXPIRED)
    return expired == 1


def actions_due(now: datetime.datetime | None = None) -> list[PendingAction]:
    """Pending actions whose time has run out (the expiry schedule expires them one by one)."""
    now = now or timezone.now()
    return list(
        PendingAction.objects.filter(status=Status.PENDING, expires_at__lte=now).order_by("pk")
    )


def execution_start(action: PendingAction) -> bool:
    """Claim an approved action for running it: True for exactly one caller, ever."""
    claimed = PendingAction.objects.filter(pk=action.pk, status=Status.APPROVED).update(
        status=Status.EXECUTING
    )
    if claimed == 1:
        action.status = Status.EXECUTING
    return claimed == 1


def execution_finish(
    action: PendingAction,
    *,
    status: str,
    result: dict[str, Any] | None = None,
    error: str = "",
    detail: dict[str, Any] | None = None,
) -> None:
    """Record how the run of a claimed action ended: executed, failed or stale."""
    assert status in (Status.EXECUTED, Status.FAILED, Status.STALE)
    now = timezone.now()
    with transaction.atomic():
        PendingAction.objects.filter(pk=action.pk, status=Status.EXECUTING).update(
            status=status, result=result or {}, error=error[:2000], executed_at=now
        )
        action.refresh_from_db()
        audit(action, status, reason=error, detail=detail)


# Why an action left approved or running past the cut-off is failed, by the state it was in.
_ABANDONED = {
    Status.EXECUTING: "interrupted while running; not retried: check the records",
    Status.APPROVED: "approved but never run (its turn failed before running it); not retried",
}


def actions_abandoned(*, older_than: datetime.timedelta) -> int:
    """Actions whose run died (claimed, never finished) or never came (approved, but the
    decision turn failed first): failed, never run again — the audit says which."""
    cutoff = timezone.now() - older_than
    stuck = PendingAction.objects.filter(status__in=list(_ABANDONED), decided_at__lt=cutoff)
    count = 0
    for action in stuck:
        with transaction.atomic():
            failed = PendingAction.objects.filter(pk=action.pk, status=action.status).update(
                status=Status.FAILED, error=_ABANDONED[Status(action.status)],
                executed_at=timezone.now(),
            )  # fmt: skip
            if failed == 1:
                action.refresh_from_db()
                audit(action, ApprovalEvent.Kind.FAILED, reason=action.error)
        count += failed
    return count


def actions_purge(*, older_than: datetime.timedelta) -> int:
    """Decided actions (and their audit lines) past the retention period."""
    cutoff = timezone.now() - older_than
    done = PendingAction.objects.filter(created_at__lt=cutoff).exclude(
        status__in=(Status.PENDING, Status.APPROVED, Status.EXECUTING)
    )
    deleted, _ = done.delete()
    return deleted
