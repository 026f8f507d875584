"""The nodes of the orchestrator graph: small typed functions over the turn's state.

`graph.build_graph()` wires them; each node reads what earlier nodes put in `TurnState` and
returns only the keys it changes. What the turn runs *for* (organisation, user, conversation,
the event sink) is the run's context (`TurnDeps`), not state.

Events go out through `TurnDeps.emit` the moment they happen: the turn runner forwards them to
the websocket from its event loop. (LangGraph's custom stream would hold a synchronous node's
writes until the node returns, so a long sub-agent step would reach the panel all at once.)
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import logging
import re
from collections.abc import Callable
from typing import Any
from zoneinfo import ZoneInfo

from langgraph.runtime import Runtime

from agents.base import Mutation, Outcome, Step, TurnContext
from agents.models import Agent
from agents.selectors import agents_for_org
from business.models import Organisation
from copilot import clarify, engines, replies
from copilot import memory as wm
from copilot.delegate import (
    ModelSide,
    execute_step,
    gated,
    handoff,
    reroute,
    yield_step,
)
from copilot.llm.provider import engine_for
from copilot.router_cache import router_for, vocabulary_for
from copilot.selectors import consulted_for_turn
from copilot.signals import read_signals
from copilot.state import StepRun, TurnDeps, TurnState
from copilot.streaming import TextStream, concurrency_limit, run_concurrently
from copilot.trace import build_trace
from copilot.understanding.normalize import fold
from copilot.understanding.values import Context, Entities, Task, Understanding

logger = logging.getLogger(__name__)

MAX_YIELDS = 2
# Intents a signal or a directive can put in the chain without the classifier.
EMERGENCY = "emergency"
FRUSTRATION = "frustration_detected"
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
    engine, provider = engine_for(deps.organisation)  # embedded without a key
    llm = None
    if provider is not None:
        from copilot.llm.client import ChatClient

        llm = ChatClient(
            provider, organisation=deps.organisation, turn_id=deps.turn_id,
            conversation_id=deps.conversation.pk, deferred_records=True,
        )  # fmt: skip
        deps.on_finish.append(llm.flush)  # the turn's ModelCall rows, in one INSERT at its end
    return {
        "engine": engine,
        "llm": llm,
        "history": engines.history_for(deps) if llm is not None else [],
        "routed_by": "embedded",
        "plan": {},
        "fallback": {},
        "pending": clarify.pending_from_state(memory.state, deps.now),
        "resumed": False,
        "shown": [],
        "stream": TextStream(deps.emit, deps.turn_id),
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
    """Decide the chain: a directive, the answer to a pending question, or an engine's reading."""
    deps = runtime.context
    router = router_for(deps.organisation)
    context = _context(deps)
    understanding = router.understand(deps.text, context)
    update: TurnState = {
        "understanding": understanding,
        "language": understanding.language,
        "intent_agents": dict(router.intents),
    }
    if understanding.directive is not None:
        update.update(_directive(state, understanding, router, context))
        return update
    if (resumed := _resume(state, deps, understanding, router, context)) is not None:
        update.update(resumed)
        return update
    engine = state["engine"]
    if engine == engines.EMBEDDED or (
        engine == engines.HYBRID and not engines.needs_model(state, understanding)
    ):
        return update
    from copilot.llm.client import ModelFailure

    try:
        plan, steps = engines.plan_with_model(
            {**state, **update}, deps, understanding,
            lambda query: router.understand(query, context).entities, context.today,
        )  # fmt: skip
    except ModelFailure as exc:
        update["fallback"] = engines.fallback_record("orchestrator", exc)
        return update
    update["plan"] = {
        "calls": [
            {"agent": c.agent, "intent": c.intent, "query": c.query, "model_query": c.model_query}
            for c in plan.calls
        ],
        "intent_count": plan.intent_count,
        "guards": list(plan.guards),
        "preamble": plan.preamble,
        "direct_reply": plan.direct_reply,
    }
    update["routed_by"] = "model"
    update["steps"] = steps
    update["sources"] = dict.fromkeys(range(len(steps)), "model")
    if plan.direct_reply and not steps:
        update["notice"] = plan.direct_reply  # the fast path: already streamed as it came
    return update


def _directive(
    state: TurnState, understanding: Understanding, router: Any, context: Context
) -> TurnState:
    """`#agent text`: that agent, verbatim in and out; an unknown name gets a choice."""
    directive = understanding.directive
    assert directive is not None
    agents = state["agents"]
    agent, matches = resolve_agent(directive.agent, agents)
    language = understanding.language
    if agent is None:
        options = [(a.name, a.label(language)) for a in (matches or list(agents.values()))]
        notice = replies.agent_choice(directive.agent, options, language, ambiguous=bool(matches))
        return {"notice": notice}
    if not directive.text:
        return {"notice": replies.directive_usage(agent.name, language)}
    inner = router.understand(directive.text, context)
    intent, entities = engines.best_intent_for(agent, inner, dict(router.intents))
    # The model's engine runs the agent's own loop; hybrid keeps the deterministic handler.
    engine = engines.LLM if state["engine"] == engines.LLM else engines.EMBEDDED
    step = Step(
        index=0, intent=intent, agent=agent.name, confidence=1.0, text=directive.text,
        entities=entities, candidates=[], engine=engine,
    )  # fmt: skip
    return {
        "direct_agent": agent.name,
        "steps": [step],
        "sources": {0: "directive"},
        "routed_by": "directive",
    }


def _resume(
    state: TurnState,
    deps: TurnDeps,
    understanding: Understanding,
    router: Any,
    context: Context,
) -> TurnState | None:
    """The message answers the pending question: resume that intent, without reclassifying."""
    pending = state.get("pending")
    if pending is None:
        return None
    agent = state["agents"].get(pending.agent)
    answer = clarify.is_answer(
        deps.text, pending, new_request=_confident_intent(state, understanding),
        emergency=state["signals"].emergency,
    )  # fmt: skip
    if agent is None or not answer:
        return {"pending": None}
    text = clarify.resumed_text(pending, deps.text)
    entities = router.understand(text, context).entities  # entity extraction, no classification
    engine = pending.engine if state["llm"] is not None else engines.EMBEDDED
    step = Step(
        index=0, intent=pending.intent, agent=pending.agent, confidence=1.0, text=text,
        entities=entities, engine=engine, resumed=True,
    )  # fmt: skip
    return {
        "steps": [step],
        "sources": {0: "clarification"},
        "routed_by": "clarification",
        "resumed": True,
    }


def _confident_intent(state: TurnState, understanding: Understanding) -> str | None:
    """The first request the embedded reading is sure of (above its agent's gate), if any."""
    for task in understanding.tasks:
        gate = state["agents"].get(task.agent)
        if gate is not None and task.intent not in NOTHING_TO_DO:
            return task.intent if task.confidence >= gate.min_confidence else None
    return None


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
        if sources.get(i) != "classifier" or agent is None or not gated(agent, step):
            continue
        ranked = [(step.intent, step.confidence), *step.candidates]
        pick = next((c for c in ranked if c[0] in allowed and intent_agents.get(c[0])), None)
        target = agents.get(intent_agents.get(pick[0], "")) if pick else None
        if pick is None or target is None:
            continue
        step.intent, step.agent = pick[0], target.name
        step.confidence = max(pick[1], target.min_confidence)
        sources[i] = "continuation"


def _with_emergency(state: TurnState, text: str) -> tuple[list[Step], dict[int, str]]:
    """The model's steps; a danger the signals saw goes first even if the model missed it."""
    steps = list(state["steps"])
    sources = ["model"] * len(steps)
    if state["signals"].emergency and not any(s.intent == EMERGENCY for s in steps):
        forced = _forced(EMERGENCY, state, text)
        if forced is not None:
            steps.insert(0, forced)
            sources.insert(0, "signals")
    for index, step in enumerate(steps):
        step.index = index
    return steps, dict(enumerate(sources))


def route(state: TurnState, runtime: Runtime[TurnDeps]) -> TurnState:
    deps = runtime.context
    subject = _scoped_state(state)
    if state.get("notice"):
        steps: list[Step] = []
        sources: dict[int, str] = {}
    elif state.get("routed_by") in ("directive", "clarification"):
        steps, sources = state["steps"], state["sources"]
    elif state.get("routed_by") == "model":
        steps, sources = _with_emergency(state, deps.text)
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
    return _next_step_node(state) if state["steps"] else "compose"


def _batch(state: TurnState) -> list[Step]:
    """The llm steps from the cursor on that may run together: none depends on another."""
    steps, cursor = state["steps"], state["cursor"]
    batch: list[Step] = []
    for step in steps[cursor : cursor + concurrency_limit()]:
        if step.engine != engines.LLM or step.agent not in state["agents"]:
            break
        if any(engines.depends(step, earlier) for earlier in batch):
            break
        batch.append(step)
    return batch


def _next_step_node(state: TurnState) -> str:
    return "fanout" if len(_batch(state)) > 1 else "subagent"


# --- subagent, fanout -----------------------------------------------------------------------


def _model_side(state: TurnState, writer: Callable[[str], None]) -> ModelSide | None:
    if state.get("llm") is None:
        return None
    return ModelSide(client=state["llm"], history=state.get("history") or [], say=writer)


def _best_effort(state: TurnState, step: Step) -> bool:
    """The conversation already asked the limit in a row: the resumed step must not ask."""
    pending = state.get("pending")
    return step.resumed and pending is not None and pending.exhausted


def subagent(state: TurnState, runtime: Runtime[TurnDeps]) -> TurnState:
    """One sub-agent run for the current step: confidence gate, then the handler (or a yield)."""
    deps = runtime.context
    step = state["steps"][state["cursor"]]
    source = state["sources"].get(step.index, "classifier")
    agent = state["agents"].get(step.agent)
    if agent is None:
        outcome = Outcome(text="", success=False, error=f"agent {step.agent} is not enabled")
        return {"current": StepRun(step=step, outcome=outcome, label=step.agent, ran=False)}
    if gated(agent, step):
        run = yield_step(deps, state["ctx"].language, agent, step, source)
    else:
        model = _model_side(state, state["stream"].part(step.agent))
        run = execute_step(
            deps, state["ctx"], agent, step, source, model=model,
            best_effort=_best_effort(state, step),
        )  # fmt: skip
    if not run.outcome.yielded:
        return {"current": run}
    return _after_yield(state, deps, run)


def fanout(state: TurnState, runtime: Runtime[TurnDeps]) -> TurnState:
    """Independent llm steps at once (O7): the first to write streams live, the others buffer
    and flush after it; each works on its own copy of the turn context."""
    deps = runtime.context
    batch = _batch(state)
    ctx = state["ctx"]

    def task(step: Step) -> tuple[str, Callable[[Callable[[str], None]], StepRun]]:
        agent = state["agents"][step.agent]
        source = state["sources"].get(step.index, "model")

        def run(writer: Callable[[str], None]) -> StepRun:
            own = dataclasses.replace(ctx, mutations=list(ctx.mutations), state=dict(ctx.state))
            return execute_step(
                deps, own, agent, step, source, model=_model_side(state, writer),
                best_effort=_best_effort(state, step),
            )  # fmt: skip

        return step.agent, run

    runs, shown = run_concurrently([task(step) for step in batch], state["stream"])
    for run in runs:
        ctx.mutations.extend(run.outcome.mutations)
        ctx.state = wm.apply_mutations(ctx.state, run.outcome.mutations)
    return {
        "runs": [*state["runs"], *runs],
        "cursor": state["cursor"] + len(batch),
        "shown": [*state["shown"], *(batch[i].index for i in shown if runs[i].streamed)],
    }


def _after_yield(state: TurnState, deps: TurnDeps, run: StepRun) -> TurnState:
    """Reroute guard: one other agent may try; the second yield of a turn goes to a person."""
    step, index = run.step, run.step.index
    yields = state["yields"] + 1
    if yields >= MAX_YIELDS:
        ticket = handoff(deps, state, step, yields)
        return {"current": run, "yields": yields, "stopped": True, "handoff_ticket": ticket}
    tried = {r.step.agent for r in state["runs"] if r.step.index == index} | {step.agent}
    alternative = reroute(state, step, tried) if index not in state["rerouted"] else None
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


# --- advance, compose -----------------------------------------------------------------------


def advance(state: TurnState, runtime: Runtime[TurnDeps]) -> TurnState:
    """Keep the finished step; its mutations become context for the next ones."""
    run = state["current"]
    assert run is not None  # after_subagent only routes here with a finished run
    ctx = state["ctx"]
    mutations: list[Mutation] = list(run.outcome.mutations)
    ctx.mutations.extend(mutations)
    ctx.state = wm.apply_mutations(ctx.state, mutations)
    shown = [*state["shown"], run.step.index] if run.streamed else state["shown"]
    return {
        "runs": [*state["runs"], run],
        "cursor": state["cursor"] + 1,
        "current": None,
        "shown": shown,
    }


def after_advance(state: TurnState) -> str:
    if state.get("stopped") or state["cursor"] >= len(state["steps"]):
        return "compose"
    return _next_step_node(state)


def _final_runs(state: TurnState) -> list[StepRun]:
    """The last run of each step index (a rerouted step's yield is superseded by its reroute)."""
    last: dict[int, StepRun] = {}
    for run in state["runs"]:
        last[run.step.index] = run
    return [last[i] for i in sorted(last)]


@dataclasses.dataclass(frozen=True)
class Part:
    """One piece of the reply: whose it is, its text, and whether it already reached the panel."""

    agent: str
    text: str
    streamed: bool = False


def _summary(step: Step, run: StepRun | None) -> replies.StepSummary:
    if run is None:  # never reached: the turn was handed to a person first
        return replies.StepSummary(step.intent, "", False, False, False, False)
    outcome = run.outcome
    return replies.StepSummary(
        intent=run.step.intent, text=outcome.text, success=outcome.success,
        yielded=outcome.yielded, ran=run.ran, pending=bool(outcome.pending_approvals),
        plan_limited=run.plan_limited, clarifying=outcome.clarify is not None,
    )  # fmt: skip


def _display_order(state: TurnState) -> list[Step]:
    """Steps whose text streamed, in the order it was shown; then the others in chain order."""
    shown = state.get("shown") or []
    rank = {index: position for position, index in enumerate(shown)}
    return sorted(state["steps"], key=lambda s: (s.index not in rank, rank.get(s.index, s.index)))


def compose_parts(state: TurnState) -> list[Part]:
    """The reply, piece by piece: preamble, each agent's answer, the orchestrator's lines."""
    language = state.get("language") or "es"
    if state.get("notice"):
        return [Part("", state["notice"], streamed=bool(state.get("plan", {}).get("direct_reply")))]
    final = {run.step.index: run for run in _final_runs(state)}
    steps = _display_order(state)
    summaries = [_summary(step, final.get(step.index)) for step in steps]
    if state.get("direct_agent"):
        # Direct line: the agent's words, verbatim; only a failure gets the orchestrator's line.
        return [
            _agent_part(step, final.get(step.index), s.text or replies.failure_line(s, language))
            for step, s in zip(steps, summaries, strict=True)
        ]
    parts: list[Part] = []
    plan = state.get("plan") or {}
    if plan.get("preamble") and "not_small_talk" not in plan.get("guards", []):
        parts.append(Part("", plan["preamble"], streamed=True))
    if state["signals"].frustrated and not state.get("handoff_ticket"):
        parts.append(Part("", replies.frustration_preface(language)))
    for step, summary in zip(steps, summaries, strict=True):
        if summary.text:
            parts.append(_agent_part(step, final.get(step.index), summary.text))
        elif summary.ran or summary.yielded:
            parts.append(Part(step.agent, replies.failure_line(summary, language)))
    if line := replies.partial_success_line(summaries, language):
        parts.append(Part("", line))
    if state.get("stopped"):
        parts.append(Part("", replies.handoff_line(state.get("handoff_ticket"), language)))
    return parts or [Part("", replies.empty_reply(language))]


def _agent_part(step: Step, run: StepRun | None, text: str) -> Part:
    streamed = run is not None and run.streamed and text == run.outcome.text
    return Part(step.agent, text, streamed=streamed)


def compose(state: TurnState, runtime: Runtime[TurnDeps]) -> TurnState:
    deps = runtime.context
    language = state.get("language") or "es"
    parts = compose_parts(state)
    stream: TextStream = state["stream"]
    # Agent names on text events where an agent speaks for itself (direct line, llm engine).
    named = bool(state.get("direct_agent")) or state.get("routed_by") == "model"
    # What did not stream yet goes out now, a few chunks per run of consecutive parts.
    pending: list[Part] = []
    for part in [*parts, Part("", "", streamed=True)]:
        agent = part.agent if named else ""
        if pending and (part.streamed or (pending[-1].agent if named else "") != agent):
            write = stream.part(pending[0].agent if named else "")
            for chunk in replies.chunks("\n\n".join(p.text for p in pending)):
                write(chunk)
            pending = []
        if not part.streamed:
            pending.append(part)
    reply = "\n\n".join(part.text for part in parts)
    labels = {name: a.label(language) for name, a in state["agents"].items()}
    consulted = consulted_for_turn(deps.organisation, deps.turn_id, labels)
    asked = {(r.step.agent, r.step.intent) for r in state["runs"] if r.outcome.clarify is not None}
    for row in consulted:
        if (row["agent"], row["intent"]) in asked:
            row["clarifying"] = True
    return {
        "reply": reply,
        "parts": [(part.agent, part.text) for part in parts],
        "consulted": consulted,
        "trace": build_trace(state, consulted),
    }
