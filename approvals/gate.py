"""The approval gate: the single function every tool call passes through (A1/A2).

A tool of category *execute* or *bulk*, or one the agent lists in `requires_approval_for`, never
runs silently: the call is filed as a PendingAction and the step is told it is held. A dry run
(`dry_run` true, or omitted where the tool defaults to a preview) changes nothing, so it passes; a
held call is stored with `dry_run: false`, so that approving it does the real work. The approvals
issue replaces the body of this function with the checkpointed, manager-decided flow; callers do
not change.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from typing import TYPE_CHECKING, Any

from django.core.serializers.json import DjangoJSONEncoder

from approvals.models import PendingAction

if TYPE_CHECKING:
    from agents.base import Step, TurnContext
    from agents.models import Agent
    from agents.registry import Tool, ToolResult

GATED_CATEGORIES = frozenset({"execute", "bulk"})
APPROVAL_TTL = datetime.timedelta(hours=24)


def needs_approval(agent: Agent, tool: Tool, arguments: dict[str, Any]) -> bool:
    if tool.is_dry_run(arguments):
        return False
    return str(tool.category) in GATED_CATEGORIES or tool.name in (
        agent.requires_approval_for or []
    )


def gate_tool_call(
    ctx: TurnContext, agent: Agent, step: Step, tool: Tool, arguments: dict[str, Any]
) -> ToolResult | None:
    """None when the call may run now; otherwise the 'held' result standing in for it."""
    from agents.registry import ToolResult

    if not needs_approval(agent, tool, arguments):
        return None
    stored = json.loads(json.dumps(arguments, cls=DjangoJSONEncoder))
    if any(param == "dry_run" for param in tool.parameters.get("properties", {})):
        stored["dry_run"] = False
    action = PendingAction.objects.create(
        organisation=ctx.organisation,
        conversation_id=ctx.conversation_id,
        agent=agent.name,
        intent=step.intent,
        tool=tool.name,
        category=str(tool.category),
        arguments=stored,
        summary=f"{tool.name}({', '.join(f'{k}={v}' for k, v in stored.items())})",
        snapshot_hash=hashlib.sha256(
            json.dumps(stored, sort_keys=True).encode("utf-8")
        ).hexdigest(),
        requested_by=ctx.user if getattr(ctx.user, "is_authenticated", False) else None,
        expires_at=ctx.now + APPROVAL_TTL,
    )
    ctx.emit(
        {
            "type": "approval_requested",
            "turn_id": ctx.turn_id,
            "approval_id": action.pk,
            "agent": agent.name,
            "tool": tool.name,
            "summary": action.summary,
        }
    )
    return ToolResult(
        ok=True,
        data={"held": True, "pending_approval_id": action.pk},
        summary=f"held for approval #{action.pk}",
    )
