"""One sub-agent run inside the graph: the confidence gate, the handler, its row and events,
the reroute candidate and the hand-off to a person.

The `subagent` node (copilot/nodes.py) decides *what* runs; this module runs it: every run,
yielded or not, leaves one AgentRun row and an agent_start/agent_end pair, and a handler's
exception becomes a failed outcome with its error instead of sinking the chain.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import InterfaceError, OperationalError

from agents.base import HANDLERS, Outcome, PlanLimitReached, Runner, Step, TurnContext
from agents.models import Agent
from copilot import memory as wm
from copilot.events import AgentEndEvent, AgentStartEvent
from copilot.services import agent_run_record
from copilot.state import StepRun, TurnDeps, TurnState

logger = logging.getLogger(__name__)

FALLBACK_INTENT = "unknown"
# Errors that may go away on a retry; anything else a handler raises is a bug (permanent).
TRANSIENT_ERRORS = (OperationalError, InterfaceError, TimeoutError, ConnectionError)


def _emit_start(deps: TurnDeps, step: Step, label: str) -> None:
    deps.emit(
        AgentStartEvent(
            type="agent_start", turn_id=deps.turn_id, agent=step.agent, label=label,
            intent=step.intent, confidence=round(step.confidence, 4),
        )
    )  # fmt: skip


def _emit_end(deps: TurnDeps, run: StepRun) -> None:
    event = AgentEndEvent(
        type="agent_end", turn_id=deps.turn_id, agent=run.step.agent, intent=run.step.intent,
        success=run.outcome.success, yielded=run.outcome.yielded,
        latency_ms=round(run.latency_ms, 2),
    )  # fmt: skip
    if run.outcome.clarify is not None:
        event["clarifying"] = True
    deps.emit(event)


def _record(
    deps: TurnDeps, run: StepRun, *, permanent: bool = False, tokens: tuple[int, int] = (0, 0)
) -> None:
    agent_run_record(
        organisation=deps.organisation,
        conversation_id=deps.conversation.pk,
        turn_id=deps.turn_id,
        agent=run.step.agent,
        intent=run.step.intent,
        confidence=run.step.confidence,
        tools=run.tools,
        plan_steps=run.plan_steps,
        latency_ms=run.latency_ms,
        success=run.outcome.success,
        yielded=run.outcome.yielded,
        error=run.outcome.error,
        permanent=permanent,
        tokens_in=tokens[0],
        tokens_out=tokens[1],
    )


def _invoke(step: Step, runner: Runner) -> tuple[Outcome, bool, bool]:
    """Run the handler: (outcome, permanent error, plan limit reached). Never raises."""
    handler = HANDLERS.get(step.intent)
    if handler is None:
        return Outcome(text="", success=False, error=f"no handler for {step.intent}"), True, False
    try:
        return handler(step, runner), False, False
    except PlanLimitReached as exc:
        error = f"plan limit {runner.agent.max_plan_steps} reached before {exc}"
        return Outcome(text="", success=False, error=error), False, True
    except Exception as exc:  # a failed step must not sink the chain; the row keeps the error
        logger.exception("handler %s failed", step.intent)
        permanent = not isinstance(exc, TRANSIENT_ERRORS)
        return (
            Outcome(text="", success=False, error=f"{type(exc).__name__}: {exc}"),
            permanent,
            False,
        )


@dataclass
class ModelSide:
    """What an llm step needs besides the template: the client, the earlier turns, the writer."""

    client: Any  # copilot.llm.client.ChatClient
    history: list[dict[str, str]]
    say: Callable[[str], None]


def execute_step(
    deps: TurnDeps,
    ctx: TurnContext,
    agent: Agent,
    step: Step,
    source: str,
    *,
    model: ModelSide | None = None,
    best_effort: bool = False,
) -> StepRun:
    """Run one step: its agent's model loop (llm engine) or its intent's handler (embedded).

    A model failure inside an llm step falls back to the embedded handler for the same step,
    unless the model had already written something (then re-running could do it twice: the
    reply says what was done and that the rest stopped).
    """
    label = agent.label(ctx.language)
    _emit_start(deps, step, label)
    held: list[int] = []

    def emit(event: dict[str, Any]) -> None:
        if event.get("type") == "approval_requested":
            held.append(int(event["approval_id"]))
        deps.emit(event)

    ctx.emit = emit  # approvals filed during this step are known from the runtime, not the text
    runner = Runner(ctx, agent, step)
    runner.best_effort = best_effort
    started = time.perf_counter()
    streamed, fallback = False, ""
    try:
        if step.engine == "llm" and model is not None:
            outcome, permanent, limited, streamed, fallback, runner = _invoke_llm(
                step, runner, model
            )
        else:
            outcome, permanent, limited = _invoke(step, runner)
    finally:
        ctx.emit = deps.emit
    outcome.pending_approvals = sorted({*outcome.pending_approvals, *held})
    run = StepRun(
        step=step, outcome=outcome, label=label,
        latency_ms=(time.perf_counter() - started) * 1000, tools=list(runner.tools_invoked),
        plan_steps=runner.plan_steps, source=source, plan_limited=limited, streamed=streamed,
        fallback=fallback,
    )  # fmt: skip
    _record(deps, run, permanent=permanent, tokens=(runner.tokens_in, runner.tokens_out))
    _emit_end(deps, run)
    return run


def _invoke_llm(
    step: Step, runner: Runner, model: ModelSide
) -> tuple[Outcome, bool, bool, bool, str, Runner]:
    """(outcome, permanent, plan limited, text streamed, fallback kind, the runner that ran)."""
    from agents.llm_agent import run_llm_step
    from copilot.llm.client import ModelFailure

    streamed = False

    def on_text(text: str) -> None:
        nonlocal streamed
        streamed = streamed or bool(text)
        model.say(text)

    try:
        outcome = run_llm_step(
            step, runner, client=model.client, history=model.history, on_text=on_text
        )
        return outcome, False, "plan limit" in outcome.error, streamed, "", runner
    except ModelFailure as exc:
        kind = getattr(exc, "kind", "error")
        logger.warning("agent %s: model failed (%s); embedded handler answers", step.agent, kind)
        if _wrote_something(runner):
            text = runner.t(
                es="Se cortó la conexión con el modelo a mitad de camino. Esto quedó hecho: ",
                en="The connection to the model dropped halfway. This part got done: ",
            ) + "; ".join(runner.tools_invoked)
            outcome = Outcome(text=text + ".", success=False, error=f"model failed: {kind}")
            return outcome, False, False, False, kind, runner
        fresh = Runner(runner.ctx, runner.agent, step)
        fresh.best_effort, fresh.tokens_in, fresh.tokens_out = (
            runner.best_effort, runner.tokens_in, runner.tokens_out,
        )  # fmt: skip
        outcome, permanent, limited = _invoke(step, fresh)
        return outcome, permanent, limited, False, kind, fresh


def _wrote_something(runner: Runner) -> bool:
    from agents.registry import Category, get_tool

    return any(get_tool(name).category is not Category.SAFE for name in runner.tools_invoked)


def yield_step(deps: TurnDeps, language: str, agent: Agent, step: Step, source: str) -> StepRun:
    label = agent.label(language)
    _emit_start(deps, step, label)
    error = f"confidence {step.confidence:.2f} below {agent.min_confidence:.2f}"
    run = StepRun(
        step=step, outcome=Outcome(text="", success=False, yielded=True, error=error),
        label=label, source=source, ran=False,
    )  # fmt: skip
    _record(deps, run)
    _emit_end(deps, run)
    return run


def reroute(state: TurnState, step: Step, tried: set[str]) -> Step | None:
    """The next candidate intent of a *different*, enabled agent, when it clears that agent's
    gate; None otherwise.

    A candidate below its own gate would only yield again: that second yield would hand a whole
    turn to a person because of one uncertain segment (a trailing "cargala con el cel…" read as
    update_customer at 0.29). Without a reroute, the step is reported as not done instead.
    """
    agents = state["agents"]
    for intent, score in step.candidates:
        name = state["intent_agents"].get(intent)
        if not name or name in tried or name not in agents:
            continue
        rerouted = Step(
            index=step.index, intent=intent, agent=name, confidence=score,
            text=step.text, entities=step.entities, candidates=[],
        )  # fmt: skip
        return None if gated(agents[name], rerouted) else rerouted
    return None


def gated(agent: Agent, step: Step) -> bool:
    # `unknown` is the fallback itself: yielding it would have nowhere better to go.
    return step.intent != FALLBACK_INTENT and step.confidence < agent.min_confidence


def handoff(deps: TurnDeps, state: TurnState, step: Step, yields: int) -> int:
    """Two yields in one turn: a person takes over through an escalation ticket."""
    from business.models import Customer, Job
    from business.selectors import scoped
    from business.services import ticket_create

    subject = state["ctx"].state
    customer_id, job_id = subject.get(wm.CUSTOMER_ID), subject.get(wm.JOB_ID)
    customer = (
        scoped(Customer, deps.organisation).filter(pk=customer_id).first() if customer_id else None
    )
    job = scoped(Job, deps.organisation).filter(pk=job_id).first() if job_id else None
    ticket = ticket_create(
        organisation=deps.organisation,
        reason="handoff",
        summary=f"{deps.text}\n\n[copilot: {yields} yields; last {step.agent}.{step.intent}]",
        customer=customer,
        job=job,
        conversation_id=deps.conversation.pk,
        actor=deps.user,
    )
    return ticket.pk
