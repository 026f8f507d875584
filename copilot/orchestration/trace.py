"""The runtime trace stored with each reply (T1): what was understood, what ran, what changed.

Built from the turn's state and its AgentRun rows (the consulted list), never from generated text.
"""

from __future__ import annotations

from typing import Any

from agents.base import CUSTOMER_ID, JOB_ID
from agents.events import ConsultedAgent
from copilot.orchestration.state import StepRun, TurnRun, TurnState
from nlu.values import Understanding


def build_trace(run: TurnRun, state: TurnState, consulted: list[ConsultedAgent]) -> dict[str, Any]:
    """The runtime trace stored with the reply (T1): what was understood and what ran."""
    reading, delegation = state["reading"], state["delegation"]
    chain = delegation.chain
    return {
        # The organisation's engine, who decided the chain, and why the model was left out.
        "engine": run.engine,
        "routed_by": reading.routed_by,
        "plan": _jsonable(reading.plan),
        "fallback": reading.fallback or None,
        "clarification": {
            "resumed": reading.resumed,
            "verdict": reading.verdict or None,
            "pending": reading.pending.as_state() if reading.pending is not None else None,
        },
        "language": reading.language,
        "signals": state["signals"].as_trace(),
        "understanding": _understanding_trace(reading.understanding),
        "directive": reading.direct_agent or None,
        "notice": bool(reading.notice),
        "steps": [_run_trace(step_run) for step_run in delegation.runs],
        "mutations": [{"kind": m.kind, "id": m.id, "label": m.label} for m in chain.mutations],
        "yields": delegation.yields,
        "handoff_ticket": delegation.handoff_ticket,
        "consulted": [dict(c) for c in consulted],
        # A/B tests (V4): the arm each tested agent ran with.
        "abtests": {name: {"test": test, "arm": arm} for name, (test, arm) in run.arms.items()},
        "state": {k: v for k, v in chain.state.items() if k in (CUSTOMER_ID, JOB_ID)},
    }


def _understanding_trace(understanding: Understanding | None) -> dict[str, Any]:
    if understanding is None:
        return {}
    return {
        "tier": understanding.tier,
        "intents": understanding.intents,
        "tasks": [
            {
                "intent": task.intent,
                "agent": task.agent,
                "confidence": round(task.confidence, 4),
                "text": task.text,
                "candidates": [[intent, round(score, 4)] for intent, score in task.candidates],
            }
            for task in understanding.tasks
        ],
        "entities": understanding.entities.as_eval_dict(),
        "engine_trace": _jsonable(understanding.trace),
    }


def _run_trace(run: StepRun) -> dict[str, Any]:
    outcome = run.outcome
    return {
        "index": run.step.index,
        "agent": run.step.agent,
        "intent": run.step.intent,
        "confidence": round(run.step.confidence, 4),
        "source": run.source,
        "success": outcome.success,
        "yielded": outcome.yielded,
        "error": outcome.error,
        "tools": run.tools,
        "plan_steps": run.plan_steps,
        "pending_approvals": outcome.pending_approvals,
        "latency_ms": round(run.latency_ms, 2),
        "engine": run.step.engine,
        "streamed": run.streamed,
        "fallback": run.fallback or None,
        "clarify": outcome.clarify.slot if outcome.clarify is not None else None,
    }


def _jsonable(value: Any) -> Any:
    """The engine's trace as JSON (dates and decimals as text)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)
