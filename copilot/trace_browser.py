"""What the trace browser (D5) shows of a turn: read from the stored trace and the turn's rows.

The understanding (tier, candidates with their scores, entities), each step with its agent,
confidence and tool calls (arguments and results), the actions it held, the model calls with
tokens and cost, the node timings as a waterfall, and the turn's seal with its check
(copilot/ledger.py). Everything comes from what was stored when the turn ran, never from
generated text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db.models import Count, Q, QuerySet

from agents.models import ToolCall
from approvals.models import PendingAction
from copilot import ledger
from copilot.models import AgentRun, Conversation, Message, TraceSeal, Turn
from llm.models import ModelCall

# Node timings drawn as bars, in the order the graph runs them (others follow, as stored).
NODE_ORDER = ("intake", "signals", "understand", "route", "delegate", "compose", "graph")


@dataclass
class Bar:
    name: str
    ms: float
    offset_pct: float
    width_pct: float


@dataclass
class SealCheck:
    seal: TraceSeal | None
    problems: list[str] = field(default_factory=list)

    @property
    def intact(self) -> bool:
        return self.seal is not None and not self.problems


@dataclass
class TurnView:
    turn: Turn
    asked: Message
    answer: Message | None
    trace: dict[str, Any]
    understanding: dict[str, Any]
    entities: list[tuple[str, str]]
    steps: list[dict[str, Any]]
    calls: list[ToolCall]
    approvals: list[PendingAction]
    model_calls: list[ModelCall]
    tokens_in: int
    tokens_out: int
    cost: Decimal
    waterfall: list[Bar]
    seal: SealCheck


def conversation_turns(conversation: Conversation) -> QuerySet[Turn]:
    """The conversation's turns, oldest first, with their message and answer."""
    return (
        Turn.objects.filter(organisation_id=conversation.organisation_id, conversation=conversation)
        .select_related("message", "answer", "user")
        .order_by("created_at", "message_id")
    )


def turn_counts(conversations: QuerySet[Conversation]) -> QuerySet[Conversation]:
    return conversations.annotate(
        turn_count=Count("turns", distinct=True),
        failed_count=Count("turns", filter=Q(turns__status=Turn.Status.FAILED), distinct=True),
    )


def turn_view(turn: Turn) -> TurnView:
    org, turn_id = turn.organisation_id, str(turn.pk)
    answer = turn.answer
    trace = dict(answer.trace) if answer is not None and isinstance(answer.trace, dict) else {}
    understanding = trace.get("understanding") or {}
    calls = list(ToolCall.objects.filter(organisation_id=org, turn_id=turn_id).order_by("pk"))
    runs = list(AgentRun.objects.filter(organisation_id=org, turn_id=turn_id))
    steps = _steps(trace, calls, runs)
    model_calls = list(
        ModelCall.objects.filter(organisation_id=org, turn_id=turn_id).order_by("pk")
    )
    approvals = list(
        PendingAction.objects.filter(
            Q(turn_id=turn_id) | Q(pk=turn.approval_id or 0), organisation_id=org
        ).order_by("pk")
    )
    return TurnView(
        turn=turn,
        asked=turn.message,
        answer=answer,
        trace=trace,
        understanding=understanding,
        entities=sorted(
            (str(k), _text(v)) for k, v in (understanding.get("entities") or {}).items() if v
        ),
        steps=steps,
        calls=calls,
        approvals=approvals,
        model_calls=model_calls,
        # The calls are on hand: summed here, not asked of the database again.
        tokens_in=sum(call.tokens_in for call in model_calls),
        tokens_out=sum(call.tokens_out for call in model_calls),
        cost=sum((call.cost for call in model_calls), Decimal(0)),
        waterfall=waterfall(trace.get("timings_ms") or {}),
        seal=check_seal(turn),
    )


def _steps(
    trace: dict[str, Any], calls: list[ToolCall], runs: list[AgentRun]
) -> list[dict[str, Any]]:
    """The stored steps with their own tool calls attached (by agent, in order); a turn whose
    answer has no steps (a decision, an interruption) shows its agent runs instead."""
    stored = [dict(step) for step in trace.get("steps") or [] if isinstance(step, dict)]
    if not stored:
        stored = [
            {
                "agent": run.agent,
                "intent": run.intent,
                "confidence": run.confidence,
                "success": run.success,
                "yielded": run.yielded,
                "error": run.error,
                "latency_ms": run.latency_ms,
            }  # fmt: skip
            for run in sorted(runs, key=lambda r: r.pk)
        ]
    remaining = list(calls)
    for step in stored:
        own = [call for call in remaining if call.agent == step.get("agent")]
        wanted = len(step.get("tools") or []) or len(own)
        step["calls"] = own[:wanted]
        remaining = [call for call in remaining if call not in step["calls"]]
    if remaining and stored:
        stored[-1]["calls"] = [*stored[-1]["calls"], *remaining]
    lines = _step_lines(trace)
    for step in stored:
        step["lined_calls"] = [(call, _next_line(lines, call.tool)) for call in step["calls"]]
    return stored


def _step_lines(trace: dict[str, Any]) -> dict[str, list[str]]:
    """Each tool's "what I did" lines, in order, as the answer shows them (in the turn's
    language): the trace says the same, not the English summary the model read."""
    did = trace.get("did")
    if not isinstance(did, dict):
        return {}
    lines: dict[str, list[str]] = {}
    for agent in did.get("agents") or []:
        for tool in (agent.get("tools") or []) if isinstance(agent, dict) else []:
            if isinstance(tool, dict) and tool.get("line"):
                lines.setdefault(str(tool.get("tool")), []).append(str(tool["line"]))
    return lines


def _next_line(lines: dict[str, list[str]], tool: str) -> str:
    queue = lines.get(tool) or []
    return queue.pop(0) if queue else ""


def waterfall(timings: dict[str, Any]) -> list[Bar]:
    """The graph's nodes one after another, as bars on the graph's total time."""
    nodes = {str(k): float(v) for k, v in timings.items() if isinstance(v, int | float)}
    total = nodes.pop("graph", 0.0)
    nodes.pop("graph_cpu", None)
    ordered = [name for name in NODE_ORDER if name in nodes]
    ordered += sorted(name for name in nodes if name not in ordered)
    total = max(total, sum(nodes[name] for name in ordered), 0.001)
    bars, offset = [], 0.0
    for name in ordered:
        ms = nodes[name]
        bars.append(Bar(name, round(ms, 1), 100 * offset / total, max(100 * ms / total, 0.5)))
        offset += ms
    if bars:
        bars.append(Bar("graph", round(total, 1), 0.0, 100.0))
    return bars


def check_seal(turn: Turn) -> SealCheck:
    """The turn's seal and whether it still vouches for the turn (the ledger's own check: its
    link to the previous seal, its digest, the rows read again)."""
    found = TraceSeal.objects.filter(
        organisation_id=turn.organisation_id, turn_id=str(turn.pk)
    ).first()
    if found is None:
        return SealCheck(None)
    before = (
        TraceSeal.objects.filter(
            organisation_id=turn.organisation_id, chain=found.chain, seq=found.seq - 1
        )
        .values_list("digest", flat=True)
        .first()
    )
    breaks = ledger.check_seal(found, before or "", found.seq, Turn.objects.filter(pk=turn.pk))
    return SealCheck(found, [item.detail for item in breaks])


def _text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)
