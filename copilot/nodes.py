"""The nodes of the orchestrator graph: small typed functions over the turn's state.

`graph.build_graph()` wires them; each node reads what earlier nodes put in `TurnState` and
returns only the keys it changes. What the turn runs *for* (organisation, user, conversation,
the event sink) is the run's context (`TurnDeps`), not state.

Events go out through `TurnDeps.emit` the moment they happen: the turn runner forwards them to
the websocket from its event loop. (LangGraph's custom stream would hold a synchronous node's
writes until the node returns, so a long sub-agent step would reach the panel all at once.)
"""

from __future__ import annotations

import datetime
import importlib
import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict
from zoneinfo import ZoneInfo

from django.db import InterfaceError, OperationalError
from langgraph.runtime import Runtime

from agents.base import HANDLERS, Mutation, Outcome, PlanLimitReached, Runner, Step, TurnContext
from agents.models import Agent
from agents.selectors import agents_for_org
from business.models import Organisation
from copilot import memory as wm
from copilot import replies
from copilot.events import (
    AgentEndEvent,
    AgentStartEvent,
    ConsultedAgent,
    TextEvent,
)
from copilot.models import Conversation
from copilot.router_cache import router_for, vocabulary_for
from copilot.selectors import consulted_for_turn
from copilot.services import agent_run_record
from copilot.signals import Signals, read_signals
from copilot.understanding.normalize import fold
from copilot.understanding.values import Context, Entities, Task, Understanding

logger = logging.getLogger(__name__)

# Takes any event of copilot/events.py (TypedDicts) and the dicts agents.base emits.
EventSink = Callable[[Mapping[str, object]], None]
MAX_YIELDS = 2
# Intents a signal or a directive can put in the chain without the classifier.
EMERGENCY = "emergency"
FRUSTRATION = "frustration_detected"
FALLBACK_INTENT = "unknown"
NOTHING_TO_DO = frozenset({"unknown", "greeting", "farewell"})
# Intents that act on the job / the customer a conversation is about (continuations).
JOB_SUBJECT = frozenset(
    {"reschedule", "cancel_job", "assign_vehicle", "generate_invoice", "follow_up", "complaint"}
)
CUSTOMER_SUBJECT = frozenset(
    {"book_job", "update_customer", "search_customer", "generate_quote", "payment_status"}
)
# Words that point back to something already said (folded): clitic pronouns on a verb
# ("pasalo", "cancelala", "mandáselo"), "el mismo", "ese", "it", "same time"...
_ANAPHORA = re.compile(
    r"\b(?:\w{3,}(?:lo|la|los|las)|mism[oa]s?|es[eao]s?|aquel\w*|it|that|same|this one)\b"
)
# Errors that may go away on a retry; anything else a handler raises is a bug (permanent).
TRANSIENT_ERRORS = (OperationalError, InterfaceError, TimeoutError, ConnectionError)


@dataclass
class TurnDeps:
    """What one turn runs for: the LangGraph run context, never part of the state."""

    organisation: Organisation
    user: Any
    conversation: Conversation
    turn_id: str
    text: str
    message_id: int  # the user's message of this turn
    now: datetime.datetime  # aware
    emit: EventSink


@dataclass
class StepRun:
    """One finished step: what ran, what it returned, and how (for the reply and the trace)."""

    step: Step
    outcome: Outcome
    label: str
    latency_ms: float = 0.0
    tools: list[str] = field(default_factory=list)
    plan_steps: int = 0
    source: str = "classifier"
    plan_limited: bool = False
    ran: bool = True


def add_timings(left: dict[str, float], right: dict[str, float]) -> dict[str, float]:
    merged = dict(left)
    for name, ms in right.items():
        merged[name] = round(merged.get(name, 0.0) + ms, 3)
    return merged


class TurnState(TypedDict, total=False):
    memory: wm.WorkingMemory
    signals: Signals
    agents: dict[str, Agent]  # the organisation's enabled agents by name
    understanding: Understanding | None
    intent_agents: dict[str, str]  # every intent the router knows → its agent
    language: str
    notice: str  # a reply that replaces the chain (a choice of agents, a usage hint)
    direct_agent: str  # `#agent text`: that agent's reply goes out verbatim
    steps: list[Step]
    sources: dict[int, str]  # step index → classifier / signals / directive / reroute
    cursor: int
    current: StepRun | None  # the step run waiting for `advance`
    runs: list[StepRun]
    ctx: TurnContext
    yields: int
    rerouted: list[int]  # step indexes already rerouted once
    handoff_ticket: int | None
    stopped: bool
    reply: str
    consulted: list[ConsultedAgent]
    trace: dict[str, Any]
    timings: Annotated[dict[str, float], add_timings]


# --- handlers -------------------------------------------------------------------------------


def load_handlers() -> None:
    """Import every agent package's `agent` module so its @handles handlers are registered."""
    from agents.registry import AGENT_MODULES

    for package in AGENT_MODULES.values():
        name = f"{package}.agent"
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:  # a missing module *inside* the agent is a real error
                raise


# --- intake, signals, understand ----------------------------------------------------------


def intake(state: TurnState, runtime: Runtime[TurnDeps]) -> TurnState:
    deps = runtime.context
    memory = wm.load_working_memory(deps.conversation, before_message_id=deps.message_id)
    # Intents are only read on the rare directive fallback: no prefetch on every turn.
    enabled = agents_for_org(deps.organisation).prefetch_related(None)
    agents = {agent.name: agent for agent in enabled}
    return {
        "memory": memory,
        "agents": agents,
        "cursor": 0,
        "runs": [],
        "steps": [],
        "sources": {},
        "yields": 0,
        "rerouted": [],
        "stopped": False,
        "handoff_ticket": None,
        "current": None,
        "notice": "",
        "direct_agent": "",
    }


def signals(state: TurnState, runtime: Runtime[TurnDeps]) -> TurnState:
    earlier = state["memory"].earlier_user_texts()
    return {"signals": read_signals(runtime.context.text, earlier_user_texts=earlier)}


def _context(deps: TurnDeps) -> Context:
    local_now = deps.now.astimezone(_tz(deps.organisation))
    return Context(
        today=local_now.date(),
        now=local_now,
        tz=deps.organisation.timezone,
        vocabulary=vocabulary_for(deps.organisation),
    )


def _tz(organisation: Organisation) -> datetime.tzinfo:
    return ZoneInfo(organisation.timezone)


def understand(state: TurnState, runtime: Runtime[TurnDeps]) -> TurnState:
    deps = runtime.context
    router = router_for(deps.organisation)
    context = _context(deps)
    understanding = router.understand(deps.text, context)
    update: TurnState = {
        "understanding": understanding,
        "language": understanding.language,
        "intent_agents": dict(router.intents),
    }
    directive = understanding.directive
    if directive is None:
        return update
    agents = state["agents"]
    agent, matches = resolve_agent(directive.agent, agents)
    language = understanding.language
    if agent is None:
        options = [(a.name, a.label(language)) for a in (matches or list(agents.values()))]
        update["notice"] = replies.agent_choice(
            directive.agent, options, language, ambiguous=bool(matches)
        )
        return update
    if not directive.text:
        update["notice"] = replies.directive_usage(agent.name, language)
        return update
    inner = router.understand(directive.text, context)
    intent, entities = best_intent_for(agent, inner, update["intent_agents"])
    update["direct_agent"] = agent.name
    update["steps"] = [
        Step(index=0, intent=intent, agent=agent.name, confidence=1.0, text=directive.text,
             entities=entities, candidates=[])
    ]  # fmt: skip
    update["sources"] = {0: "directive"}
    return update


def resolve_agent(typed: str, agents: dict[str, Agent]) -> tuple[Agent | None, list[Agent]]:
    """The agent `#typed` names: exact name or label, else a unique prefix. Never a guess.

    Returns (agent, []) on a match, (None, candidates) when ambiguous, (None, []) when unknown.
    """
    wanted = fold(typed.strip().lstrip("#"))
    if not wanted:
        return None, []

    def names(agent: Agent) -> set[str]:
        return {fold(agent.name), fold(agent.label_es), fold(agent.label_en)}

    exact = [a for a in agents.values() if wanted in names(a)]
    if len(exact) == 1:
        return exact[0], []
    prefixed = exact or [a for a in agents.values() if any(n.startswith(wanted) for n in names(a))]
    if len(prefixed) == 1:
        return prefixed[0], []
    return None, prefixed


def best_intent_for(
    agent: Agent, understanding: Understanding, intent_agents: dict[str, str]
) -> tuple[str, Entities]:
    """The named agent's intent that best fits the text (the router's ranking, then the first)."""
    for task in understanding.tasks:
        ranked = [(task.intent, task.confidence), *task.candidates]
        for intent, _score in ranked:
            if intent_agents.get(intent) == agent.name:
                return intent, task.entities
    own = [i.name for i in agent.intents.all()]
    return (own[0] if own else FALLBACK_INTENT), understanding.entities


# --- route ----------------------------------------------------------------------------------


def _step(index: int, task: Task) -> Step:
    return Step(
        index=index,
        intent=task.intent,
        agent=task.agent,
        confidence=task.confidence,
        text=task.text,
        entities=task.entities,
        candidates=list(task.candidates),
    )


def _forced(intent: str, state: TurnState, text: str) -> Step | None:
    agent = state["intent_agents"].get(intent)
    if agent is None or agent not in state["agents"]:
        return None  # the organisation disabled the agent that would handle it
    understanding = state["understanding"]
    entities = understanding.entities if understanding else Entities()
    # A deterministic signal, not a guess: it passes any confidence gate.
    return Step(index=0, intent=intent, agent=agent, confidence=1.0, text=text, entities=entities)


def _chain(state: TurnState, text: str) -> tuple[list[Step], list[str]]:
    """Steps in dependency order (the router's), with the signals applied; and their sources."""
    understanding = state["understanding"]
    tasks = understanding.tasks if understanding else []
    steps = [_step(i, task) for i, task in enumerate(tasks)]
    sources = ["classifier"] * len(steps)
    sig = state["signals"]
    if sig.emergency:
        # Emergency first, even if the classifier missed it; the rest is chained after it.
        found = [i for i, s in enumerate(steps) if s.intent == EMERGENCY]
        if found:
            steps.insert(0, steps.pop(found[0]))
            sources.insert(0, sources.pop(found[0]))
        elif (forced := _forced(EMERGENCY, state, text)) is not None:
            steps.insert(0, forced)
            sources.insert(0, "signals")
    elif sig.frustrated and all(s.intent in NOTHING_TO_DO for s in steps):
        # Anger with nothing else to act on: a person should hear it (TAXONOMY.md).
        forced = _forced(FRUSTRATION, state, text)
        if forced is not None:
            steps, sources = [forced], ["signals"]
    for index, step in enumerate(steps):
        step.index = index
    return steps, sources


def _scoped_state(state: TurnState) -> dict[str, Any]:
    """The conversation state the sub-agents read, minus a subject the message moved away from.

    "Cancelalo" continues the job under discussion; "agendale a Marta Díaz…" is about Marta, so
    the previous customer's job must not leak into it.
    """
    scoped = dict(state["memory"].state)
    understanding = state["understanding"]
    named = understanding.entities.customer if understanding else None
    current = scoped.get(wm.CUSTOMER_LABEL)
    if named and current and _fold(named) != _fold(str(current)):
        for key in (wm.CUSTOMER_ID, wm.CUSTOMER_LABEL, wm.JOB_ID, wm.JOB_LABEL):
            scoped.pop(key, None)
    return scoped


def _fold(text: str) -> str:
    return fold(text).strip()


def _elliptical(text: str) -> bool:
    """A message that leans on the previous turn ("pasalo al viernes", "cancelalo", "move it")."""
    return bool(_ANAPHORA.search(_fold(text)))


def _continue_subject(
    steps: list[Step], sources: dict[int, str], state: TurnState, subject: dict[str, Any], text: str
) -> None:
    """Below its gate, an elliptical step continues the job / customer under discussion.

    The classifier reads "pasalo al viernes a la misma hora" with little confidence because the
    words that would carry it are in the previous turn. When one of its candidates acts on the
    subject the conversation is about, that candidate runs, lifted to its agent's threshold;
    the trace marks the step "continuation" and keeps the classifier's own scores.
    """
    allowed = (JOB_SUBJECT if subject.get(wm.JOB_ID) else frozenset()) | (
        CUSTOMER_SUBJECT if subject.get(wm.CUSTOMER_ID) else frozenset()
    )
    if not allowed or not _elliptical(text):
        return
    agents, intent_agents = state["agents"], state["intent_agents"]
    for i, step in enumerate(steps):
        agent = agents.get(step.agent)
        if sources.get(i) != "classifier" or agent is None or not _gated(agent, step):
            continue
        ranked = [(step.intent, step.confidence), *step.candidates]
        pick = next((c for c in ranked if c[0] in allowed and intent_agents.get(c[0])), None)
        target = agents.get(intent_agents.get(pick[0], "")) if pick else None
        if pick is None or target is None:
            continue
        step.intent, step.agent = pick[0], target.name
        step.confidence = max(pick[1], target.min_confidence)
        sources[i] = "continuation"


def route(state: TurnState, runtime: Runtime[TurnDeps]) -> TurnState:
    deps = runtime.context
    subject = _scoped_state(state)
    if state.get("notice"):
        steps: list[Step] = []
        sources: dict[int, str] = {}
    elif state.get("direct_agent"):
        steps, sources = state["steps"], state["sources"]
    else:
        chain, origin = _chain(state, deps.text)
        steps, sources = chain, dict(enumerate(origin))
        _continue_subject(steps, sources, state, subject, deps.text)
    language = state.get("language") or "es"
    ctx = TurnContext(
        organisation=deps.organisation,
        user=deps.user,
        conversation_id=deps.conversation.pk,
        turn_id=deps.turn_id,
        now=deps.now,
        language=language,
        state=subject,
        emit=deps.emit,
    )
    return {"steps": steps, "sources": sources, "ctx": ctx, "language": language}


def after_route(state: TurnState) -> str:
    return "subagent" if state["steps"] else "compose"


# --- subagent -------------------------------------------------------------------------------


def _emit_start(deps: TurnDeps, step: Step, label: str) -> None:
    deps.emit(
        AgentStartEvent(
            type="agent_start", turn_id=deps.turn_id, agent=step.agent, label=label,
            intent=step.intent, confidence=round(step.confidence, 4),
        )
    )  # fmt: skip


def _emit_end(deps: TurnDeps, run: StepRun) -> None:
    deps.emit(
        AgentEndEvent(
            type="agent_end", turn_id=deps.turn_id, agent=run.step.agent, intent=run.step.intent,
            success=run.outcome.success, yielded=run.outcome.yielded,
            latency_ms=round(run.latency_ms, 2),
        )
    )  # fmt: skip


def _record(deps: TurnDeps, run: StepRun, *, permanent: bool = False) -> None:
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


def _execute(deps: TurnDeps, ctx: TurnContext, agent: Agent, step: Step, source: str) -> StepRun:
    label = agent.label(ctx.language)
    _emit_start(deps, step, label)
    held: list[int] = []

    def emit(event: dict[str, Any]) -> None:
        if event.get("type") == "approval_requested":
            held.append(int(event["approval_id"]))
        deps.emit(event)

    ctx.emit = emit  # approvals filed during this step are known from the runtime, not the text
    runner = Runner(ctx, agent, step)
    started = time.perf_counter()
    try:
        outcome, permanent, limited = _invoke(step, runner)
    finally:
        ctx.emit = deps.emit
    outcome.pending_approvals = sorted({*outcome.pending_approvals, *held})
    run = StepRun(
        step=step, outcome=outcome, label=label,
        latency_ms=(time.perf_counter() - started) * 1000, tools=list(runner.tools_invoked),
        plan_steps=runner.plan_steps, source=source, plan_limited=limited,
    )  # fmt: skip
    _record(deps, run, permanent=permanent)
    _emit_end(deps, run)
    return run


def _yield(deps: TurnDeps, language: str, agent: Agent, step: Step, source: str) -> StepRun:
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


def _reroute(state: TurnState, step: Step, tried: set[str]) -> Step | None:
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
        return None if _gated(agents[name], rerouted) else rerouted
    return None


def _gated(agent: Agent, step: Step) -> bool:
    # `unknown` is the fallback itself: yielding it would have nowhere better to go.
    return step.intent != FALLBACK_INTENT and step.confidence < agent.min_confidence


def subagent(state: TurnState, runtime: Runtime[TurnDeps]) -> TurnState:
    """One sub-agent run for the current step: confidence gate, then the handler (or a yield)."""
    deps = runtime.context
    step = state["steps"][state["cursor"]]
    source = state["sources"].get(step.index, "classifier")
    agent = state["agents"].get(step.agent)
    if agent is None:
        outcome = Outcome(text="", success=False, error=f"agent {step.agent} is not enabled")
        return {"current": StepRun(step=step, outcome=outcome, label=step.agent, ran=False)}
    if _gated(agent, step):
        run = _yield(deps, state["ctx"].language, agent, step, source)
    else:
        run = _execute(deps, state["ctx"], agent, step, source)
    if not run.outcome.yielded:
        return {"current": run}
    return _after_yield(state, deps, run)


def _after_yield(state: TurnState, deps: TurnDeps, run: StepRun) -> TurnState:
    """Reroute guard: one other agent may try; the second yield of a turn goes to a person."""
    step, index = run.step, run.step.index
    yields = state["yields"] + 1
    if yields >= MAX_YIELDS:
        ticket = handoff(deps, state, step, yields)
        return {"current": run, "yields": yields, "stopped": True, "handoff_ticket": ticket}
    tried = {r.step.agent for r in state["runs"] if r.step.index == index} | {step.agent}
    alternative = _reroute(state, step, tried) if index not in state["rerouted"] else None
    if alternative is None:
        return {"current": run, "yields": yields}
    return {
        "current": None,
        "yields": yields,
        "steps": [*state["steps"][:index], alternative, *state["steps"][index + 1 :]],
        "sources": {**state["sources"], index: "reroute"},
        "rerouted": [*state["rerouted"], index],
        "runs": [*state["runs"], run],
    }


def after_subagent(state: TurnState) -> str:
    return "subagent" if state.get("current") is None else "advance"


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


# --- advance, compose -----------------------------------------------------------------------


def advance(state: TurnState, runtime: Runtime[TurnDeps]) -> TurnState:
    """Keep the finished step; its mutations become context for the next ones."""
    run = state["current"]
    assert run is not None  # after_subagent only routes here with a finished run
    ctx = state["ctx"]
    mutations: list[Mutation] = list(run.outcome.mutations)
    ctx.mutations.extend(mutations)
    ctx.state = wm.apply_mutations(ctx.state, mutations)
    return {"runs": [*state["runs"], run], "cursor": state["cursor"] + 1, "current": None}


def after_advance(state: TurnState) -> str:
    if state.get("stopped") or state["cursor"] >= len(state["steps"]):
        return "compose"
    return "subagent"


def _final_runs(state: TurnState) -> list[StepRun]:
    """The last run of each step index (a rerouted step's yield is superseded by its reroute)."""
    last: dict[int, StepRun] = {}
    for run in state["runs"]:
        last[run.step.index] = run
    return [last[i] for i in sorted(last)]


def _summaries(state: TurnState) -> list[replies.StepSummary]:
    final = {run.step.index: run for run in _final_runs(state)}
    summaries = []
    for step in state["steps"]:
        run = final.get(step.index)
        if run is None:  # never reached: the turn was handed to a person first
            summaries.append(replies.StepSummary(step.intent, "", False, False, False, False))
            continue
        outcome = run.outcome
        summaries.append(
            replies.StepSummary(
                intent=run.step.intent, text=outcome.text, success=outcome.success,
                yielded=outcome.yielded, ran=run.ran, pending=bool(outcome.pending_approvals),
                plan_limited=run.plan_limited,
            )
        )  # fmt: skip
    return summaries


def compose_text(state: TurnState) -> str:
    language = state.get("language") or "es"
    if state.get("notice"):
        return state["notice"]
    summaries = _summaries(state)
    if state.get("direct_agent"):
        # Direct line: the agent's words, verbatim; only a failure gets the orchestrator's line.
        return "\n\n".join(s.text or replies.failure_line(s, language) for s in summaries)
    parts: list[str] = []
    if state["signals"].frustrated and not state.get("handoff_ticket"):
        parts.append(replies.frustration_preface(language))
    for summary in summaries:
        if summary.text:
            parts.append(summary.text)
        elif summary.ran or summary.yielded:
            parts.append(replies.failure_line(summary, language))
    if line := replies.partial_success_line(summaries, language):
        parts.append(line)
    if state.get("stopped"):
        parts.append(replies.handoff_line(state.get("handoff_ticket"), language))
    return "\n\n".join(parts) or replies.empty_reply(language)


def compose(state: TurnState, runtime: Runtime[TurnDeps]) -> TurnState:
    deps = runtime.context
    language = state.get("language") or "es"
    reply = compose_text(state)
    agent = state.get("direct_agent") or ""
    for chunk in replies.chunks(reply):
        event = TextEvent(type="text", turn_id=deps.turn_id, text=chunk)
        if agent:
            event["agent"] = agent
        deps.emit(event)
    labels = {name: a.label(language) for name, a in state["agents"].items()}
    consulted = consulted_for_turn(deps.organisation, deps.turn_id, labels)
    return {"reply": reply, "consulted": consulted, "trace": build_trace(state, consulted)}


def build_trace(state: TurnState, consulted: list[ConsultedAgent]) -> dict[str, Any]:
    """The runtime trace stored with the reply (T1): what was understood and what ran."""
    understanding = state.get("understanding")
    ctx = state["ctx"]
    return {
        "engine": "embedded",
        "language": state.get("language", ""),
        "signals": state["signals"].as_trace(),
        "understanding": _understanding_trace(understanding),
        "directive": state.get("direct_agent") or None,
        "notice": bool(state.get("notice")),
        "steps": [_run_trace(run) for run in state["runs"]],
        "mutations": [{"kind": m.kind, "id": m.id, "label": m.label} for m in ctx.mutations],
        "yields": state["yields"],
        "handoff_ticket": state.get("handoff_ticket"),
        "consulted": [dict(c) for c in consulted],
        "state": {k: v for k, v in ctx.state.items() if k in (wm.CUSTOMER_ID, wm.JOB_ID)},
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
