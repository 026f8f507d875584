"""The approval gate: every tool call passes through it (A1/A2), on plain data.

`Runner.call` (agents/base.py) describes the call it is about to make as a `ProposedCall` — ids,
names and JSON arguments, nothing of the agents' own types — and asks `needs_approval`. A tool of
category *execute* or *bulk*, or one the agent's approval rules list, never runs silently: the
caller describes it (`Filing`: what will happen in both languages, the records it relies on as
they are now) and `hold` files it as a PendingAction; the caller gets a `Held` back instead of
running it. A dry run changes nothing, so it passes. The arguments are stored as they would run
(a previewing tool's `dry_run` already false), so approving the action does the real work.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any

from approvals.models import ApprovalEvent, PendingAction
from approvals.services import audit, snapshot_hash

GATED_CATEGORIES = frozenset({"execute", "bulk"})
DEFAULT_TTL_HOURS = 24


@dataclass(frozen=True)
class ProposedCall:
    organisation_id: int
    conversation_id: int | None
    turn_id: str
    requested_by_id: int | None
    agent: str
    intent: str
    tool: str
    category: str  # the tool's category: safe, suggest, execute or bulk
    arguments: dict[str, Any]  # JSON data, as the call would run
    approval_rules: tuple[str, ...]  # tools the agent holds for approval beyond their category
    dry_run: bool  # the call only previews
    now: datetime.datetime


@dataclass(frozen=True)
class Filing:
    """How a held call is shown and checked: what will happen, in Spanish and English; links to
    its records; the records it relies on as they are now; and the agent's rules for it."""

    summary_es: str
    summary_en: str
    links: list[dict[str, Any]] = field(default_factory=list)
    snapshot: dict[str, Any] = field(default_factory=dict)
    expiry_hours: int = DEFAULT_TTL_HOURS
    decider_role: str = "manager"


@dataclass(frozen=True)
class Held:
    approval_id: int
    summary_es: str
    summary_en: str


def needs_approval(call: ProposedCall) -> bool:
    if call.dry_run:
        return False
    return call.category in GATED_CATEGORIES or call.tool in call.approval_rules


def hold(call: ProposedCall, filing: Filing) -> Held:
    """File the call for a decision instead of running it."""
    action = PendingAction.objects.create(
        organisation_id=call.organisation_id,
        conversation_id=call.conversation_id,
        turn_id=call.turn_id,
        agent=call.agent,
        intent=call.intent,
        tool=call.tool,
        category=call.category,
        arguments=call.arguments,
        summary=filing.summary_es,
        summary_en=filing.summary_en,
        links=filing.links,
        snapshot=filing.snapshot,
        snapshot_hash=snapshot_hash(filing.snapshot),
        decider_role=filing.decider_role,
        requested_by_id=call.requested_by_id,
        expires_at=call.now + datetime.timedelta(hours=max(1, filing.expiry_hours)),
        created_at=call.now,
    )
    audit(action, ApprovalEvent.Kind.REQUESTED, actor=action.requested_by)
    return Held(approval_id=action.pk, summary_es=filing.summary_es, summary_en=filing.summary_en)
