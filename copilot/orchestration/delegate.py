"""Running the chain: each step through its agent, in dependency order (O5, O6, O7).

`run_chain` is the whole of the graph's `delegate` node. For each step: the confidence gate (a
step below its agent's threshold yields; one other agent may take it; the second yield of a turn
hands it to a person), then the agent's handler (embedded) or its model loop (llm). Independent
llm steps run at once, sharing one live text slot (streaming.py). Every run — yielded or
not — leaves one AgentRun row and an agent_start/agent_end pair, and a handler's exception
becomes a failed outcome with its error instead of sinking the chain.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import InterfaceError, OperationalError, transaction
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from agents import intent_gate
from agents.base import HANDLERS, Chain, Outcome, PlanLimitReached, Runner, Step
from agents.escalation.tools import TicketResult
from agents.events import AgentEndEvent, AgentStartEvent
from agents.llm_agent import acted, done_summary, is_write, run_llm_step
from agents.models import Agent
from agents.phrasing import held_id
from agents.registry import ToolResult
from copilot.orchestration import write_gate
from copilot.orchestration.state import Delegation, StepRun, TurnRun, TurnState, Waiting
from copilot.orchestration.streaming import Writer, concurrency_limit, run_concurrently
from copilot.services import agent_run_record
from llm.client import ChatClient, ModelFailure
from nlu.values import NEVER_ACTS, IntentSpecs, with_role

logger = logging.getLogger(__name__)

LLM = "llm"
MAX_YIELDS = 2
# Steps the write gate judges (write_gate.py): what the router or a model read. A
# directive, an answer to a question, a signal or an obligation is not a guess.
JUDGED_SOURCES = frozenset({"classifier", "continuation", "model"})
ASKED = "doubt"  # the source of a step that asked which reading was meant
# Errors that may go away on a retry; anything else a handler raises is a bug (permanent).
TRANSIENT_ERRORS = (OperationalError, InterfaceError, TimeoutError, ConnectionError)


@dataclass
class ModelSide:
    """What an llm step needs besides the template: the client, the earlier turns, the writer."""

    client: ChatClient
    history: list[dict[str, str]]
    say: Writer
    summary: str = ""  # the working memory's summary: read with the history (O9)


# --- the chain ------------------------------------------------------------------------------


def run_chain(run: TurnRun, state: TurnState) -> Delegation:
    """Every step of the route, in order; independent llm steps together."""
    route, reading = state["route"], state["reading"]
    done = Delegation(
        steps=list(route.steps),
        runs=[],
        chain=Chain(reading.language, dict(route.subject)),
        specs=reading.specs,
    )
    sources = dict(route.sources)
    rerouted: set[int] = set()
    cursor = 0
    while cursor < len(done.steps) and not done.stopped:
        step = done.steps[cursor]
        if waits := _waits_on(done, step):
            # It builds on a step that is waiting for a manager: it waits too.
            source = sources.get(step.index, "classifier")
            done.waiting.append(Waiting(step=step, approvals=waits, source=source))
            cursor += 1
            continue
        if _builds_on_a_question(done, step):
            done.deferred.append(step)  # it runs with the operator's answer (clarify.py)
            cursor += 1
            continue
        batch = _batch(done, run.agents, cursor)
        if len(batch) > 1:
            _run_together(run, state, done, batch, sources)
            cursor += len(batch)
            continue
        finished = _run_one(run, state, done, done.steps[cursor], sources, rerouted)
        if finished:
            cursor += 1
    for key, value in route.aside.items():  # an organisation-wide question kept it aside
        done.chain.state.setdefault(key, value)
    return done


def _run_one(
    run: TurnRun,
    state: TurnState,
    done: Delegation,
    step: Step,
    sources: dict[int, str],
    rerouted: set[int],
) -> bool:
    """One step; False when it was rerouted and its replacement still has to run."""
    source = sources.get(step.index, "classifier")
    agent = run.agents.get(step.agent)
    if agent is None:
        outcome = Outcome(text="", success=False, error=f"agent {step.agent} is not enabled")
        _keep(done, StepRun(step=step, outcome=outcome, label=step.agent, ran=False))
        return True
    if source in JUDGED_SOURCES:
        settled = _settle_doubt(run, state, done, agent, step, sources)
        if settled is not None:
            return settled
    if gated(agent, step, done.specs):
        result = yield_step(run, done.chain.language, agent, step, source)
    else:
        model = _model_side(run, state, run.stream.part(step.agent))
        result = execute_step(
            run, done.chain, agent, step, source, model=model, best_effort=_best_effort(state, step)
        )
    if not result.outcome.yielded:
        _keep(done, result)
        return True
    # Reroute guard: one other agent may try; the second yield of a turn goes to a person.
    done.yields += 1
    if done.yields >= MAX_YIELDS:
        done.handoff_ticket = handoff(run, done.chain, step, done.yields)
        done.stopped = True
        _keep(done, result)
        return True
    tried = {r.step.agent for r in done.runs if r.step.index == step.index} | {step.agent}
    alternative = reroute(run, state, step, tried) if step.index not in rerouted else None
    if alternative is None:
        _keep(done, result)
        return True
    done.runs.append(result)
    done.steps[step.index] = alternative
    sources[step.index] = "reroute"
    rerouted.add(step.index)
    return False


def _settle_doubt(
    run: TurnRun,
    state: TurnState,
    done: Delegation,
    agent: Agent,
    step: Step,
    sources: dict[int, str],
) -> bool | None:
    """A doubtful write (write_gate.py) runs the best reading that writes nothing, or
    asks which reading was meant; None when the step is not doubtful (or only lacks what its
    handler will ask for). Like `_run_one`: False when the replacement still has to run."""
    source = sources.get(step.index, "classifier")
    doubt = _doubt(agent, step, done, source, state, run.ctx.text)
    if not doubt:
        return None
    intent_agents = state["reading"].intent_agents
    never = with_role(state["reading"].specs, *NEVER_ACTS)
    quiet = write_gate.quiet_reading(
        step, intent_agents, run.agents, lambda intent: writes(state, intent),
        never=never, question=doubt == "question",
    )  # fmt: skip
    if quiet is not None and doubt != "vague":
        done.steps[step.index] = quiet
        sources[step.index] = "act"
        return False
    if doubt == "entities":
        return None  # its handler asks for what is missing, in its own words
    readings = write_gate.offered(step, intent_agents, run.agents, never)
    _keep(done, ask_readings(run, done.chain.language, agent, step, readings, doubt))
    return True


def writes(state: TurnState, intent: str) -> bool:
    """Whether a step of this intent writes, as the registry says (the reading's intent specs):
    the one place the delegate asks."""
    spec = state["reading"].specs.get(intent)
    return spec is not None and spec.writes


def _doubt(
    agent: Agent, step: Step, done: Delegation, source: str, state: TurnState, message: str
) -> str:
    """Why this step must not run as read (copilot/orchestration/write_gate.py), or ""."""
    if source == "model":
        if not writes(state, step.intent):
            return ""
        ranked = _embedded_readings(state)
        support = max((score for intent, score in ranked if intent == step.intent), default=0.0)
        step.candidates = [c for c in ranked if c[0] != step.intent]  # what the question offers
        spec = state["reading"].specs.get(step.intent)
        return write_gate.doubt_model(step, message, support, spec=spec)
    if writes(state, step.intent):
        spec = state["reading"].specs.get(step.intent)
        lifted = source == "continuation"
        return write_gate.doubt(agent, step, done.chain.state, spec=spec, lifted=lifted)
    return "vague" if write_gate.vague(step, state["reading"].specs) else ""


def _embedded_readings(state: TurnState) -> list[tuple[str, float]]:
    """The embedded reading's intents and candidates, best first."""
    ranked = [
        pair
        for task in state["reading"].understanding.tasks
        for pair in [(task.intent, task.confidence), *task.candidates]
    ]
    return sorted(ranked, key=lambda pair: -pair[1])


def ask_readings(
    run: TurnRun, language: str, agent: Agent, step: Step, readings: list[str], doubt: str
) -> StepRun:
    """The doubtful step asks which reading was meant instead of running (or yielding); why it
    was doubtful (`doubt`) is in the trace's source "doubt" and the log."""
    logger.info("step %s.%s not sure (%s): asking", step.agent, step.intent, doubt)
    label = agent.label(language)
    _emit_start(run, step, label)
    outcome = write_gate.ask(readings, language)
    result = StepRun(step=step, outcome=outcome, label=label, source=ASKED)
    _close(run, result)
    return result


def _keep(done: Delegation, result: StepRun) -> None:
    """A finished step: its mutations become context for the next ones."""
    done.runs.append(result)
    done.chain.absorb(result.outcome.mutations)
    done.held.extend(result.outcome.pending_approvals)
    if result.streamed:
        done.shown.append(result.step.index)


def _waits_on(done: Delegation, step: Step) -> list[int]:
    """The approvals a step must wait for: those of earlier steps it depends on that create
    what it works on (a booking for a customer whose registration is held has no customer yet),
    or that are themselves waiting. A step that only follows another (moving the jobs of a
    technician whose absence is held) goes on: the manager sees both requests at once."""
    waits: set[int] = set()
    for earlier in done.final_runs():
        held = earlier.outcome.pending_approvals
        if held and _creates(done, earlier.step) and depends(done, step, earlier.step):
            waits.update(held)
    for waiting in done.waiting:
        if depends(done, step, waiting.step):
            waits.update(waiting.approvals)
    return sorted(waits)


def _builds_on_a_question(done: Delegation, step: Step) -> bool:
    """It builds on a step that asked the operator instead of creating what it uses ("¿es el
    mismo que…?" before a booking for that customer), or on one deferred for that."""
    asked = [r.step for r in done.final_runs() if r.outcome.clarify and _creates(done, r.step)]
    return any(depends(done, step, earlier) for earlier in [*asked, *done.deferred])


def _run_together(
    run: TurnRun, state: TurnState, done: Delegation, batch: list[Step], sources: dict[int, str]
) -> None:
    """Independent llm steps at once (O7): the first to write streams live, the others buffer
    and flush after it; each works on its own copy of the chain."""

    def task(step: Step) -> tuple[str, Callable[[Writer], StepRun]]:
        agent = run.agents[step.agent]
        source = sources.get(step.index, "model")

        def go(writer: Writer) -> StepRun:
            return execute_step(
                run, done.chain.copy(), agent, step, source,
                model=_model_side(run, state, writer), best_effort=_best_effort(state, step),
            )  # fmt: skip

        return step.agent, go

    results, shown = run_concurrently([task(step) for step in batch], run.stream)
    for result in results:
        done.runs.append(result)
        done.chain.absorb(result.outcome.mutations)
        done.held.extend(result.outcome.pending_approvals)
    done.shown.extend(batch[i].index for i in shown if results[i].streamed)


def _batch(done: Delegation, agents: dict[str, Agent], cursor: int) -> list[Step]:
    """The llm steps from the cursor on that may run together: none depends on another, none
    waits for a manager."""
    batch: list[Step] = []
    for step in done.steps[cursor : cursor + concurrency_limit()]:
        if step.engine != LLM or step.agent not in agents or _waits_on(done, step):
            break
        if _builds_on_a_question(done, step):
            break
        if any(depends(done, step, earlier) for earlier in batch):
            break
        batch.append(step)
    return batch


def depends(done: Delegation, later: Step, earlier: Step) -> bool:
    """The registry says `later` runs after `earlier` (it uses what that one creates)."""
    spec = done.specs.get(later.intent)
    return spec is not None and earlier.intent in spec.after


def _creates(done: Delegation, step: Step) -> bool:
    """The registry says the step creates what later steps use (a customer, a job)."""
    spec = done.specs.get(step.intent)
    return spec is not None and spec.creates


def _model_side(run: TurnRun, state: TurnState, writer: Writer) -> ModelSide | None:
    if run.llm is None:
        return None
    return ModelSide(
        client=run.llm, history=state.get("history") or [], say=writer,
        summary=state["memory"].summary if "memory" in state else "",
    )  # fmt: skip


def _best_effort(state: TurnState, step: Step) -> bool:
    """The conversation already asked the limit in a row: the resumed step must not ask."""
    pending = state["reading"].pending
    return step.resumed and pending is not None and pending.exhausted


# --- one step -------------------------------------------------------------------------------


def _emit_start(run: TurnRun, step: Step, label: str) -> None:
    run.ctx.emit(
        AgentStartEvent(
            type="agent_start", turn_id=run.ctx.turn_id, agent=step.agent, label=label,
            intent=step.intent, confidence=round(step.confidence, 4),
        )
    )  # fmt: skip


def _emit_end(run: TurnRun, result: StepRun) -> None:
    event = AgentEndEvent(
        type="agent_end", turn_id=run.ctx.turn_id, agent=result.step.agent,
        intent=result.step.intent, success=result.outcome.success,
        yielded=result.outcome.yielded, latency_ms=round(result.latency_ms, 2),
    )  # fmt: skip
    if result.outcome.clarify is not None:
        event["clarifying"] = True
    run.ctx.emit(event)


def _close(
    run: TurnRun, result: StepRun, *, permanent: bool = False, tokens: tuple[int, int] = (0, 0)
) -> None:
    """The step's run row, its reads' rows and `agent_end` in one transaction: the turn's event
    log writes the step's events at `agent_end` (copilot/turnlog.py), so they commit with them."""
    with transaction.atomic():
        run.ctx.calls.write()  # the step's reads (agents/context.py CallLog)
        _record(run, result, permanent=permanent, tokens=tokens)
        _emit_end(run, result)


def _record(run: TurnRun, result: StepRun, *, permanent: bool, tokens: tuple[int, int]) -> None:
    ctx = run.ctx
    row = agent_run_record(
        organisation=ctx.organisation,
        conversation_id=ctx.conversation_id,
        turn_id=ctx.turn_id,
        agent=result.step.agent,
        intent=result.step.intent,
        confidence=result.step.confidence,
        tools=result.tools,
        plan_steps=result.plan_steps,
        latency_ms=result.latency_ms,
        success=result.outcome.success,
        yielded=result.outcome.yielded,
        error=result.outcome.error,
        permanent=permanent,
        tokens_in=tokens[0],
        tokens_out=tokens[1],
        engine=result.step.engine,
        source=result.source,
        rerouted_from=result.step.rerouted_from,
        clarified=result.outcome.clarify is not None,
        arm=run.arms.get(result.step.agent),
    )
    run.recorded.append(row)


def _invoke(step: Step, runner: Runner) -> tuple[Outcome, bool, bool]:
    """Run the handler: (outcome, permanent error, plan limit reached). Never raises."""
    handler = HANDLERS.get(step.intent)
    if handler is None:  # an intent added in the registry alone: understood, never acted on
        text = intent_gate.cannot_yet(runner.language)
        return Outcome(text=text, success=False, error=f"no handler for {step.intent}"), True, False
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


def execute_step(
    run: TurnRun,
    chain: Chain,
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
    label = agent.label(chain.language)
    _emit_start(run, step, label)
    runner = Runner(run.ctx, chain, agent, step)
    runner.best_effort = best_effort
    started = time.perf_counter()
    streamed, fallback = False, ""
    if (stopped := intent_gate.check(step, runner)) is not None:
        outcome, permanent, limited = stopped, False, False
    elif step.engine == LLM and model is not None:
        outcome, permanent, limited, streamed, fallback, runner = _invoke_llm(step, runner, model)
    else:
        outcome, permanent, limited = _invoke(step, runner)
    # Approvals filed during this step are known from the runtime, not from the text.
    outcome.pending_approvals = sorted({*outcome.pending_approvals, *runner.held})
    result = StepRun(
        step=step, outcome=outcome, label=label,
        latency_ms=(time.perf_counter() - started) * 1000, tools=list(runner.tools_invoked),
        plan_steps=runner.plan_steps, source=source, plan_limited=limited, streamed=streamed,
        fallback=fallback,
    )  # fmt: skip
    _close(run, result, permanent=permanent, tokens=(runner.tokens_in, runner.tokens_out))
    return result


def _invoke_llm(
    step: Step, runner: Runner, model: ModelSide
) -> tuple[Outcome, bool, bool, bool, str, Runner]:
    """(outcome, permanent, plan limited, text streamed, fallback kind, the runner that ran)."""
    streamed = False

    def on_text(text: str) -> None:
        nonlocal streamed
        streamed = streamed or bool(text)
        model.say(text)

    try:
        outcome = run_llm_step(
            step, runner, client=model.client, history=model.history, on_text=on_text,
            summary=model.summary,
        )  # fmt: skip
        return outcome, False, "plan limit" in outcome.error, streamed, "", runner
    except ModelFailure as exc:
        kind = getattr(exc, "kind", "error")
        logger.warning("agent %s: model failed (%s); embedded handler answers", step.agent, kind)
        model.say.retract(kind)  # what it streamed is replaced below: the panel marks it
        if acted(runner.results):
            # Re-running could write twice: say, by record, what was done and what was refused.
            outcome = Outcome(
                text=stopped_text(kind, runner), success=False, error=f"model failed: {kind}"
            )
            return outcome, False, False, False, kind, runner
        # Nothing changed (only reads, or writes the service refused, e.g. "no technician is
        # free then"): the step's handler answers it again, with the refusal's own reason and
        # its alternatives (the free slots, the missing field), as on the embedded engine.
        fresh = Runner(runner.ctx, runner.chain, runner.agent, step)
        fresh.best_effort, fresh.tokens_in, fresh.tokens_out = (
            runner.best_effort, runner.tokens_in, runner.tokens_out,
        )  # fmt: skip
        outcome, permanent, limited = _invoke(step, fresh)
        return outcome, permanent, limited, False, kind, fresh


def stopped_text(kind: str, runner: Runner) -> str:
    """An llm step that stopped after writing something: why it stopped (when the model's
    answer was not usable, that is no news for the operator), what got done, by record, and
    each write the service refused, in the tool's own words."""
    done = done_summary(runner.results, runner.language)
    lines = [] if kind in UNUSABLE_ANSWER else [stopped_midway(kind, runner.language)]
    if done:
        lines.append(runner.say(_("This part got done: %(done)s."), done=done))
    for reason in refused_writes(runner.results):
        lines.append(
            runner.say(pgettext_lazy("a refused write", "Not done: %(reason)s"), reason=reason)
        )
    return " ".join(lines)


UNUSABLE_ANSWER = frozenset({"not_an_answer", "unbacked_claim"})


def refused_writes(results: list[tuple[str, ToolResult]]) -> list[str]:
    """The reasons of the write calls that failed, as their tools gave them (once each)."""
    reasons = [
        (result.error or result.summary).strip()
        for name, result in results
        if not result.ok and held_id(result) is None and is_write(name)
    ]
    return [
        reason if reason.endswith((".", "!", "?")) else f"{reason}."
        for reason in dict.fromkeys(reasons)
        if reason
    ]


def stopped_midway(kind: str, language: str) -> str:
    """Why an llm step stopped after writing something, in plain words."""
    en = language == "en"
    if kind in ("budget", "turn_deadline", "deadline", "length"):
        return (
            "The model used up the time or tokens this request may take."
            if en
            else "El modelo agotó el tiempo o los tokens que puede usar este pedido."
        )
    if kind == "content_filter":
        return (
            "The model's provider stopped the answer (content filter)."
            if en
            else "El proveedor del modelo cortó la respuesta (filtro de contenido)."
        )
    return (
        "The connection to the model dropped halfway."
        if en
        else "Se cortó la conexión con el modelo a mitad de camino."
    )


def yield_step(run: TurnRun, language: str, agent: Agent, step: Step, source: str) -> StepRun:
    label = agent.label(language)
    _emit_start(run, step, label)
    error = f"confidence {step.confidence:.2f} below {agent.min_confidence:.2f}"
    result = StepRun(
        step=step, outcome=Outcome(text="", success=False, yielded=True, error=error),
        label=label, source=source, ran=False,
    )  # fmt: skip
    _close(run, result)
    return result


def reroute(run: TurnRun, state: TurnState, step: Step, tried: set[str]) -> Step | None:
    """The next candidate intent of a *different*, enabled agent, when it clears that agent's
    gate; None otherwise.

    A candidate below its own gate would only yield again: that second yield would hand a whole
    turn to a person because of one uncertain segment (a trailing "cargala con el cel…" read as
    update_customer at 0.29). Without a reroute, the step is reported as not done instead.
    """
    agents = run.agents
    intent_agents = state["reading"].intent_agents
    for intent, score in step.candidates:
        name = intent_agents.get(intent)
        if not name or name in tried or name not in agents:
            continue
        rerouted = Step(
            index=step.index, intent=intent, agent=name, confidence=score,
            text=step.text, entities=step.entities, candidates=[], rerouted_from=step.agent,
        )  # fmt: skip
        return None if gated(agents[name], rerouted, state["reading"].specs) else rerouted
    return None


def gated(agent: Agent, step: Step, specs: IntentSpecs) -> bool:
    """Below its agent's threshold: the step yields. Never an out-of-scope step (the registry's
    role): it is the fallback itself, and yielding it would have nowhere better to go."""
    spec = specs.get(step.intent)
    if spec is not None and spec.role == "out_of_scope":
        return False
    return step.confidence < agent.min_confidence


def handoff(run: TurnRun, chain: Chain, step: Step, yields: int) -> int | None:
    """Two yields in one turn: a person takes over through an escalation ticket, opened by the
    escalation agent's `ticket_create` through `Runner.call` like any other write (its ToolCall
    row, events and approval rules). None when that agent cannot open tickets here."""
    escalation = run.agents.get("escalation")
    if escalation is None:
        return None
    customer_id, job_id = chain.state.get("customer_id"), chain.state.get("job_id")
    arguments: dict[str, Any] = {
        "reason": "handoff",
        "summary": f"{run.ctx.text}\n\n[copilot: {yields} yields; last {step.agent}.{step.intent}]",
        **({"customer_id": customer_id} if customer_id else {}),
        **({"job_id": job_id} if job_id else {}),
    }
    result = Runner(run.ctx, chain, escalation, step).call("ticket_create", **arguments)
    opened = TicketResult.of(result)  # None when refused, failed or held for approval
    return opened.ticket.id if opened is not None else None
