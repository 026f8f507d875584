"""The nodes of the orchestrator graph: small typed functions over the turn's state.

`graph.build_graph()` wires them; each node reads what earlier nodes wrote and returns only the
keys it owns (the table in orchestration/state.py). What the turn runs *for* — the organisation, the
user, the conversation, the event sink — is the run's context (`TurnRun`), not state.

Events go out through `TurnContext.emit` the moment they happen (LangGraph's custom stream would
hold a synchronous node's writes until the node returns, so a long sub-agent step would reach the
panel all at once).
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from typing import Any

from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from agents.base import CUSTOMER_ID, CUSTOMER_LABEL, JOB_ID, JOB_LABEL, Step
from agents.events import DirectLineEvent
from agents.models import Agent
from agents.phrasing import unable_text
from approvals.models import PendingAction
from common.text import fold
from copilot.orchestration import clarify, direct_line, engines, obligations, replies
from copilot.orchestration import memory as wm
from copilot.orchestration.delegate import gated, run_chain, writes
from copilot.orchestration.resume import run_decision
from copilot.orchestration.state import Delegation, Reading, Route, StepRun, TurnRun, TurnState
from copilot.orchestration.streaming import TextStream
from copilot.orchestration.trace import build_trace
from copilot.router_cache import router_for, router_with_intents, vocabulary_for
from copilot.selectors import consulted_of, get_conversation_for_org, recent_messages
from copilot.services import turn_plan_record
from llm import answers as model_text
from llm.client import ModelFailure
from nlu import Router, answers, choices
from nlu.acts import read_act
from nlu.openers import how_it_starts, opening_word
from nlu.privacy import redact_for_display
from nlu.reference import organisation_wide
from nlu.tone import Signals, read_signals
from nlu.values import (
    NEVER_ACTS,
    Context,
    Directive,
    Entities,
    IntentSpecs,
    Task,
    Understanding,
    first_intent,
    intent_of_role,
    with_role,
)

# Intents a signal or a directive can put in the chain without the classifier.
SUBJECT_KEYS = (CUSTOMER_ID, CUSTOMER_LABEL, JOB_ID, JOB_LABEL)
# An offered slot: a line with a clock time ("viernes 04/12 11:00 con Diego Fernández").
_SLOT = re.compile(r"\b\d{1,2}:\d{2}\b")
_JOB_NUMBER = re.compile(r"#\d")
# Words that point back to something already said (folded): clitic pronouns on a verb
# ("pasalo", "cancelala", "mandáselo"), "el mismo", "ese", "it", "same time"...
_ANAPHORA = re.compile(
    r"\b(?:\w{3,}(?:lo|la|los|las)|mism[oa]s?|es[eao]s?|aquel\w*|it|that|same|this one)\b"
)


# --- intake, signals ------------------------------------------------------------------------


def intake(state: TurnState, runtime: Runtime[TurnRun]) -> TurnState:
    """Working memory, and what the models read of earlier turns."""
    run = runtime.context
    ctx = run.ctx
    conversation = run.conversation
    if conversation is None or conversation.pk != ctx.conversation_id:
        conversation = get_conversation_for_org(ctx.organisation.pk, ctx.conversation_id or 0)
    # One read of the earlier messages for both: the working memory's last few and, when a
    # model reads this turn, the longer history it is sent.
    summarised = bool(conversation.summary)
    wanted = max(wm.RECENT_MESSAGES, engines.history_limit(summarised=summarised) if run.llm else 0)
    earlier = recent_messages(conversation.pk, wanted, before_id=ctx.message_id)
    memory = wm.load_working_memory(conversation, before_message_id=ctx.message_id, earlier=earlier)
    return {
        "memory": memory,
        "history": (
            engines.history_for(ctx, summarised=summarised, earlier=earlier)
            if run.llm is not None
            else []
        ),
        "pending": clarify.pending_from_state(memory.state, ctx.now),
    }


def signals(state: TurnState, runtime: Runtime[TurnRun]) -> TurnState:
    earlier = state["memory"].earlier_user_texts()
    return {"signals": read_signals(runtime.context.ctx.text, earlier_user_texts=earlier)}


# --- understand -----------------------------------------------------------------------------


def _context(run: TurnRun) -> Context:
    ctx = run.ctx
    return Context(
        today=ctx.today,
        now=ctx.local_now,
        tz=ctx.organisation.timezone,
        vocabulary=vocabulary_for(ctx.organisation),
    )


def understand(state: TurnState, runtime: Runtime[TurnRun]) -> TurnState:
    """Decide the chain: a directive, the answer to a pending question, or an engine's reading."""
    run = runtime.context
    router = (  # an A/B test arm's intents, when this conversation runs one (agents/abtest.py)
        router_with_intents(run.ctx.organisation, run.arm_intents)
        if run.arm_intents
        else router_for(run.ctx.organisation)
    )
    context = _context(run)
    understanding = router.understand(run.ctx.text, context)
    reading = Reading(
        understanding=understanding,
        language=understanding.language,
        intent_agents=dict(router.intents),
        specs=dict(router.specs),
        pending=state.get("pending"),
    )
    directive, line = (
        understanding.directive,
        direct_line.open_agent(state["memory"].state, run.agents),
    )
    if line is None and state["memory"].state.get(direct_line.STATE_KEY):
        # Its agent was disabled since: the line closes (and its indicator), never reopens.
        reading.direct_line = ""
        _line_event(run, "", "")
    # What this message must consult (T3), known before a model plans so it can be made to; a
    # directive adds its agent (`_directive`).
    reading.obligations = obligations.obligations_for(run.ctx.text, run.agents, ticked=run.consult)
    if directive is not None and direct_line.is_exit(directive.agent):
        _close_line(run, reading, line)
    elif directive is not None:
        _directive(state, run, reading, router, context, directive)
    elif line is not None:  # the open line: the whole message goes to that agent…
        answering = reading.pending is not None and reading.pending.agent == line.name
        if answering and _resume(state, run, reading, router, context):
            if reading.routed_by == "clarification":  # …an answer to its question resumes it
                reading.direct_agent, reading.direct_policy = line.name, line.direct_line
                reading.direct_sticky = True
        else:
            _directive(state, run, reading, router, context, Directive(line.name, run.ctx.text))
            reading.direct_sticky = True
    elif _resume(state, run, reading, router, context) or _picks_offered(
        state, run, reading, router, context
    ):
        pass
    elif _model_reads(state, run, reading):
        _plan_with_model(state, run, reading, router, context)
    return {"reading": reading}


def _model_reads(state: TurnState, run: TurnRun, reading: Reading) -> bool:
    """Whether the orchestrator model reads this message (llm; hybrid below a gate)."""
    understanding = reading.understanding
    return run.llm is not None and engines.model_reads(
        run.engine, run.agents, understanding, reading.specs
    )


def _plan_with_model(
    state: TurnState, run: TurnRun, reading: Reading, router: Router, context: Context
) -> None:
    say = run.stream.part("")
    try:
        plan, steps = engines.plan_with_model(
            state, run, reading, lambda query: router.understand(query, context).entities, say
        )
    except ModelFailure as exc:
        reading.fallback = engines.fallback_record("orchestrator", exc)
        say.retract(reading.fallback["kind"])  # a preamble it streamed: the embedded chain answers
        return
    if "not_small_talk" in plan.guards:
        say.retract("not_small_talk")  # it answered a request itself: an agent answers instead
    reading.plan = {
        "calls": [
            {"agent": c.agent, "intent": c.intent, "query": c.query, "model_query": c.model_query}
            for c in plan.calls
        ],
        "intent_count": plan.intent_count,
        "guards": list(plan.guards),
        "preamble": plan.preamble,
        "direct_reply": plan.direct_reply,
    }
    reading.routed_by = "model"
    reading.steps = steps
    if plan.direct_reply and not steps:
        reading.notice = plan.direct_reply  # the fast path: already streamed as it came


def _directive(
    state: TurnState,
    run: TurnRun,
    reading: Reading,
    router: Router,
    context: Context,
    directive: Directive,
) -> None:
    """`#agent text`: that agent, verbatim in and out; `#agent` alone opens the line to it; an
    unknown or ambiguous name gets a choice, never a guess."""
    agents = run.agents
    agent, matches = resolve_agent(directive.agent, agents)
    language = reading.language
    if agent is None:
        options = [(a.name, a.label(language)) for a in (matches or list(agents.values()))]
        reading.notice = replies.agent_choice(
            directive.agent, options, language, ambiguous=bool(matches)
        )
        return
    if not directive.text:  # `#agent` alone: the line stays open to it until `#salir`
        reading.direct_line = agent.name
        reading.notice = replies.direct_line_opened(agent.label(language), agent.name, language)
        _line_event(run, agent.name, agent.label(language))
        return
    inner = router.understand(directive.text, context)
    intent, entities = engines.best_intent_for(agent, inner, reading.intent_agents, reading.specs)
    # The model's engine runs the agent's own loop; hybrid keeps the deterministic handler.
    engine = engines.LLM if run.engine == engines.LLM else engines.EMBEDDED
    reading.steps = [
        Step(
            index=0, intent=intent, agent=agent.name, confidence=1.0, text=directive.text,
            entities=entities, candidates=[], engine=engine,
        )
    ]  # fmt: skip
    reading.direct_agent = agent.name
    reading.direct_policy = agent.direct_line
    reading.routed_by = "directive"
    if agent.name not in {o.agent for o in reading.obligations}:
        reading.obligations.insert(0, obligations.directive(agent.name))


def _close_line(run: TurnRun, reading: Reading, line: Agent | None) -> None:
    """`#salir` / `#exit`: the line closes (or there was none open, and that is said)."""
    language = reading.language
    reading.direct_line = ""
    reading.notice = replies.direct_line_closed(
        line.label(language) if line is not None else "", language
    )
    if line is not None:
        _line_event(run, "", "")


def _line_event(run: TurnRun, agent: str, label: str) -> None:
    run.ctx.emit(
        DirectLineEvent(type="direct_line", turn_id=run.ctx.turn_id, agent=agent, label=label)
    )


def _resume(
    state: TurnState, run: TurnRun, reading: Reading, router: Router, context: Context
) -> bool:
    """The message answers the pending question: resume that intent, without reclassifying.
    True when the chain is decided here (resumed, or a reply instead of the chain); False when
    the message is read on its own (no question, or a new request that drops it)."""
    pending = reading.pending
    if pending is None:
        return _never_mind(run, reading)
    verdict = clarify.judge(run.ctx.text, pending, _heard(state, run, reading, router))
    if pending.agent not in run.agents:
        verdict = "new_request"  # the organisation disabled the agent that asked
    reading.verdict = verdict
    if verdict != "answer":
        reading.pending = None  # nothing resumes: nothing is written from this reply
        return _not_answered(verdict, pending, reading)
    intent, agent, text = pending.intent, pending.agent, clarify.resumed_text(pending, run.ctx.text)
    if offered := clarify.readings_of(pending.slot):  # "which reading?": the chosen one runs
        phrases = [replies.intent_phrase(i, reading.language) for i in offered]
        chosen = choices.pick(run.ctx.text, phrases)
        agent = reading.intent_agents.get(offered[chosen], "") if chosen is not None else ""
        if chosen is None or agent not in run.agents:
            reading.verdict, reading.pending = "unanswered", None
            return _not_answered("unanswered", pending, reading)
        intent, text = offered[chosen], pending.text
    entities = router.understand(text, context).entities  # entity extraction, no classification
    engine = pending.engine if run.llm is not None else engines.EMBEDDED
    reading.steps = [
        Step(
            index=0, intent=intent, agent=agent, confidence=1.0, text=text,
            entities=entities, engine=engine, resumed=True,
        )
    ]  # fmt: skip
    for later in pending.then:  # the steps that waited for this answer, after it
        reading.steps.append(
            Step(
                index=len(reading.steps), intent=later.intent, agent=later.agent,
                confidence=1.0, text=later.text,
                entities=router.understand(later.text, context).entities,
                engine=later.engine if run.llm is not None else engines.EMBEDDED,
            )
        )  # fmt: skip
    reading.routed_by = "clarification"
    reading.resumed = True
    return True


def _picks_offered(
    state: TurnState, run: TurnRun, reading: Reading, router: Router, context: Context
) -> bool:
    """A reply to the free slots the previous answer listed ("el segundo", "dale, el de las 11
    con Lucas", "the first one") books that slot — or moves the job to it, when the list
    answered a move — for the customer under discussion. Only a choice act picks (nlu/acts.py);
    the slot's day and time come from its line, its technician too unless the reply names one,
    the service from the request that asked for the slots."""
    recent = state["memory"].recent
    said = next((m for m in reversed(recent) if m.role != "user"), None)
    asked = next((m.text for m in reversed(recent) if m.role == "user"), "")
    last = state["memory"].state.get(wm.LAST_INTENTS, [])
    intent = _picked_as(last, reading.specs)
    if not intent:  # a list of jobs ("#12 … 08:00") is not a list of slots
        return False
    lines = choices.option_lines(said.text if said else "")
    slots = [line for line in lines if _SLOT.search(line) and not _JOB_NUMBER.search(line)]
    if not slots or read_act(run.ctx.text).act != "choice":
        return False
    chosen = choices.pick(run.ctx.text, slots)
    agent = reading.intent_agents.get(intent, "")
    if chosen is None or agent not in run.agents:
        return False
    text = f"{slots[chosen]}\n{asked}"
    entities = router.understand(text, context).entities
    said_so = reading.understanding.entities
    if said_so.technician:  # "el de las 11 con Lucas": that slot's time with the one named
        entities.technician, entities.technician_matched = (
            said_so.technician, said_so.technician_matched,
        )  # fmt: skip
        text = f"{text}\n{run.ctx.text}"
    entities = entities.merged_with(said_so)
    engine = engines.LLM if run.llm is not None and run.engine == engines.LLM else engines.EMBEDDED
    reading.steps = [
        Step(
            index=0, intent=intent, agent=agent, confidence=1.0, text=text, entities=entities,
            engine=engine,
        )
    ]  # fmt: skip
    reading.routed_by = "choice"
    return True


def _picked_as(last: list[str], specs: IntentSpecs) -> str:
    """What a pick among the options the previous answer listed reads as (the registry's
    `picked_as`), or "" when none of its intents offers options. A write that offered its own
    next options (a refused move offers the next slots: reschedule → reschedule) wins over a
    read that listed them (check_availability → book_job); of two such writes, the one the
    other's correction reads as (a move, after a booking)."""
    picks = [(i, specs[i].picked_as) for i in last if i in specs and specs[i].picked_as]
    own = [picked for intent, picked in picks if picked == intent]
    corrected = [specs[p].corrected_by for p in own if specs[p].corrected_by in own]
    if own:
        return (corrected or own)[0]
    return picks[0][1] if picks else ""


def _not_answered(verdict: str, pending: clarify.Pending, reading: Reading) -> bool:
    """A reply that does not answer: a new request is read on its own; "olvidalo" gets an
    acknowledgement; anything else ("no sé", garbage) a summary of what was not done."""
    if verdict == "new_request":
        return False
    later = [step.intent for step in pending.then]
    if verdict == "never_mind":
        reading.notice = replies.question_dropped(
            pending.intent, later, reading.language, reading.specs
        )
    else:
        unable = unable_text(pending.intent, pending.slot, reading.language, reading.specs)
        reading.notice = replies.question_unanswered(unable, later, reading.language)
    return True


def _never_mind(run: TurnRun, reading: Reading) -> bool:
    """ "Olvidalo" with no question open: nothing to drop, and nothing to cancel either."""
    if not answers.never_mind(run.ctx.text, question_open=False):
        return False
    reading.notice = replies.question_dropped("", [], reading.language)
    return True


def _heard(state: TurnState, run: TurnRun, reading: Reading, router: Router) -> clarify.Heard:
    understanding = reading.understanding
    return clarify.Heard(
        entities=understanding.entities,
        confident=_confident_intent(run.agents, understanding, reading.specs),
        opening=_opening_intent(router, understanding, run.ctx.text),
        emergency=bool(
            emergency_flagged(state["signals"], understanding, run.agents, reading.specs)
        ),
        outside=_surely_outside(run.agents, understanding, reading.specs),
    )


def _opening_intent(router: Router, understanding: Understanding, text: str) -> str | None:
    """The intent of the request a reply opens with: its verb's ("buscá al cliente…" →
    search_customer), else the embedded reading's; None when it does not open like one."""
    if how_it_starts(text, router.openers) != "request":
        return None
    verb = router.verbs.get(opening_word(text))
    top = understanding.tasks[0].intent if understanding.tasks else None
    return verb or (None if top in with_role(router.specs, *NEVER_ACTS) else top)


def _surely_outside(
    agents: dict[str, Agent], understanding: Understanding, specs: IntentSpecs
) -> bool:
    """Every part of the message is out of scope, each above its agent's gate."""
    outside = with_role(specs, "out_of_scope")
    tasks = understanding.tasks
    return bool(tasks) and all(
        t.intent in outside and t.agent in agents and t.confidence >= agents[t.agent].min_confidence
        for t in tasks
    )


def _confident_intent(
    agents: dict[str, Agent], understanding: Understanding, specs: IntentSpecs
) -> str | None:
    """The first request the embedded reading is sure of (above its agent's gate), if any."""
    never = with_role(specs, *NEVER_ACTS)
    for task in understanding.tasks:
        gate = agents.get(task.agent)
        if gate is not None and task.intent not in never:
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


def _forced(
    intent: str | None, state: TurnState, agents: dict[str, Agent], text: str
) -> Step | None:
    """A step of this intent (the registry's emergency, its frustration), if it has one."""
    reading = state["reading"]
    agent = reading.intent_agents.get(intent) if intent else None
    if intent is None or agent is None or agent not in agents:
        return None  # the organisation disabled the agent that would handle it
    entities = reading.understanding.entities if reading.understanding else Entities()
    # A deterministic signal, not a guess: it passes any confidence gate.
    return Step(index=0, intent=intent, agent=agent, confidence=1.0, text=text, entities=entities)


def _chain(state: TurnState, agents: dict[str, Agent], text: str) -> tuple[list[Step], list[str]]:
    """Steps in dependency order (the router's), with the signals applied; and their sources."""
    tasks = state["reading"].understanding.tasks
    steps = [_step(i, task) for i, task in enumerate(tasks)]
    sources = ["classifier"] * len(steps)
    if _flagged(state, agents):
        steps, sources = _emergency_first(steps, sources, state, agents, text)
    elif state["signals"].frustrated and all(s.intent in _never_acts(state) for s in steps):
        # Anger with nothing else to act on: a person should hear it (TAXONOMY.md).
        forced = _forced(intent_of_role(state["reading"].specs, "frustration"), state, agents, text)
        if forced is not None:
            steps, sources = [forced], ["signals"]
    for index, step in enumerate(steps):
        step.index = index
    return steps, sources


def emergency_flagged(
    signals: Signals, understanding: Understanding, agents: dict[str, Agent], specs: IntentSpecs
) -> str:
    """Who says this message is an emergency: "signals", "classifier" (the embedded reading,
    above the gate of the agent that handles it), or "" when nobody does."""
    if signals.emergency:
        return "signals"
    emergency = first_intent(specs)
    for task in understanding.tasks:
        agent = agents.get(task.agent)
        if task.intent != emergency or agent is None:
            continue
        if not gated(agent, _step(0, task), specs):
            return "classifier"
    return ""


def _emergency_first(
    steps: list[Step], sources: list[str], state: TurnState, agents: dict[str, Agent], text: str
) -> tuple[list[Step], list[str]]:
    """An emergency is an obligation on every engine (T3): the chain opens with one emergency
    step that runs the escalation agent's own handler — the safety instruction and the urgent
    ticket — whatever the classifier or a model asked for. Every other step of that agent folds
    into it (its ticket carries the whole message, and a turn opens one ticket); a model's
    steps for other agents run after it, as asked."""
    forced = _forced(first_intent(state["reading"].specs), state, agents, text)
    if forced is None:
        return steps, sources  # the organisation disabled the agent that would handle it
    others = [
        (s, source) for s, source in zip(steps, sources, strict=True) if s.agent != forced.agent
    ]
    return [forced, *(s for s, _ in others)], [
        _flagged(state, agents),
        *(source for _, source in others),
    ]


def _never_acts(state: TurnState) -> frozenset[str]:
    return with_role(state["reading"].specs, *NEVER_ACTS)


def _flagged(state: TurnState, agents: dict[str, Agent]) -> str:
    reading = state["reading"]
    return emergency_flagged(state["signals"], reading.understanding, agents, reading.specs)


def _subject(state: TurnState, text: str) -> dict[str, Any]:
    """The conversation state the sub-agents read, minus a subject the message moved away from.

    "Cancelalo" continues the job under discussion; "agendale a Marta Díaz…" is about Marta, so
    the previous customer's job must not leak into it; "¿quién nos debe plata?" is about the
    whole organisation (nlu/reference.py), unless it points at the subject ("¿y él?"). A
    customer writing on WhatsApp stays their own subject.
    """
    scoped = dict(state["memory"].state)
    named = state["reading"].understanding.entities.customer
    current = scoped.get(CUSTOMER_LABEL)
    if _everyone(state, text):
        return {k: v for k, v in scoped.items() if k not in SUBJECT_KEYS}
    if named and current and _fold(named) != _fold(str(current)):
        for key in SUBJECT_KEYS:
            scoped.pop(key, None)
    return scoped


def _everyone(state: TurnState, text: str) -> bool:
    """An organisation-wide question from the office (nlu/reference.py)."""
    named = state["reading"].understanding.entities.customer
    return not named and organisation_wide(text) and not state["memory"].writes_to_customer()


def _set_aside(state: TurnState, text: str) -> dict[str, Any]:
    """The subject an organisation-wide question leaves out, kept for the next turns."""
    if not _everyone(state, text):
        return {}
    return {k: v for k, v in state["memory"].state.items() if k in SUBJECT_KEYS}


def _fold(text: str) -> str:
    return fold(text).strip()


def _elliptical(text: str) -> bool:
    """A message that leans on the previous turn ("pasalo al viernes", "cancelalo", "move it")."""
    return bool(_ANAPHORA.search(_fold(text)))


def _continue_subject(
    steps: list[Step],
    sources: dict[int, str],
    state: TurnState,
    agents: dict[str, Agent],
    subject: dict[str, Any],
    text: str,
) -> None:
    """Below its gate, an elliptical step continues the job / customer under discussion.

    The classifier reads "pasalo al viernes a la misma hora" with little confidence because the
    words that would carry it are in the previous turn. When one of its candidates acts on the
    subject the conversation is about, that candidate runs, lifted to its agent's threshold;
    the trace marks the step "continuation" and keeps the classifier's own scores.
    """
    kinds = {kind for kind, key in (("job", JOB_ID), ("customer", CUSTOMER_ID)) if subject.get(key)}
    specs = state["reading"].specs
    allowed = {name for name, spec in specs.items() if spec.subject and spec.subject in kinds}
    if not allowed or not _elliptical(text):
        return
    intent_agents = state["reading"].intent_agents
    for i, step in enumerate(steps):
        agent = agents.get(step.agent)
        if sources.get(i) != "classifier" or agent is None or not gated(agent, step, specs):
            continue
        ranked = [(step.intent, step.confidence), *step.candidates]
        pick = next((c for c in ranked if c[0] in allowed and intent_agents.get(c[0])), None)
        target = agents.get(intent_agents.get(pick[0], "")) if pick else None
        if pick is None or target is None:
            continue
        step.intent, step.agent = pick[0], target.name
        step.confidence = max(pick[1], target.min_confidence)
        sources[i] = "continuation"


def _correction_of_last_write(state: TurnState, subject: dict[str, Any]) -> str:
    """What a correction reads as when the previous turn wrote the job under discussion (its
    newest record) with an intent the registry says a correction turns into another
    (`corrected_by`: book_job → reschedule), or ""."""
    memory = state["memory"].state
    records = [r for r in memory.get(wm.RECORDS, []) if isinstance(r, dict)]
    specs = state["reading"].specs

    def corrected(intent: object) -> str:
        spec = specs.get(intent) if isinstance(intent, str) else None
        return spec.corrected_by if spec is not None and spec.writes else ""

    last = memory.get(wm.LAST_INTENTS, [])
    if not records or not any(corrected(i) for i in last):
        return ""
    newest = records[-1]
    return corrected(newest.get("intent")) if newest.get("id") == subject.get(JOB_ID) else ""


def _correct_last_write(
    steps: list[Step],
    sources: dict[int, str],
    state: TurnState,
    agents: dict[str, Agent],
    subject: dict[str, Any],
    text: str,
) -> None:
    """Right after a booking (or a move), a correction ("mejor a las 15", "no, el miércoles",
    "dale el jueves a las 15") moves the job just written: it never books a second one.

    A message is a correction by its act (nlu/acts.py), or by what it carries: a new day or time
    for a booking and nothing else (no other customer, no service).
    """
    into = _correction_of_last_write(state, subject) if steps else ""
    target = agents.get(state["reading"].intent_agents.get(into, "")) if into else None
    found = state["reading"].understanding.entities
    if target is None or not (found.date or found.time) or found.customer or found.service:
        return
    # The writes a correction turns into `into` would write again (book a second job).
    specs = state["reading"].specs
    again = {n for n, s in specs.items() if s.corrected_by == into and n != into}
    correcting = read_act(text).act == "correction"
    for i, step in enumerate(steps):
        # A doubtful reading ("mejor a las 15": out of scope 0.36, a move 0.33) among whose
        # candidates the move is: nothing but a new time for the job just written.
        doubtful = _doubtful(step, agents, specs) and into in [name for name, _ in step.candidates]
        if step.intent in again or (correcting and step.intent == into) or doubtful:
            step.intent, step.agent = into, target.name
            step.confidence = max(step.confidence, target.min_confidence)
            sources[i] = "correction"


def _doubtful(step: Step, agents: dict[str, Agent], specs: Any) -> bool:
    """Below its agent's threshold (`gated`), or the out-of-scope fallback, which `gated` never
    holds back (it has nowhere better to go) but which a correction may replace."""
    spec = specs.get(step.intent)
    agent = agents.get(step.agent)
    fallback = spec is not None and spec.role == "out_of_scope"
    return fallback or (agent is not None and gated(agent, step, specs))


def _with_emergency(
    state: TurnState, agents: dict[str, Agent], text: str, source: str
) -> tuple[list[Step], dict[int, str]]:
    """The steps a model or a directive decided; a danger the signals or the embedded reading
    saw goes first, run by its handler, whatever the model asked for (it may add steps, never
    drop or replace that one)."""
    steps = list(state["reading"].steps)
    sources = [source] * len(steps)
    if _flagged(state, agents):
        steps, sources = _emergency_first(steps, sources, state, agents, text)
    for index, step in enumerate(steps):
        step.index = index
    return steps, dict(enumerate(sources))


def _courtesy(
    steps: list[Step], sources: dict[int, str], agents: dict[str, Agent], specs: IntentSpecs
) -> None:
    """Below its gate, a courtesy reading (a farewell read at 0.33) is answered as what it
    looks like: a wrong guess costs a friendly line and changes nothing, while yielding would
    say "I'm not sure how to say goodbye". The trace marks the step "courtesy"."""
    courtesy = with_role(specs, "courtesy")
    for i, step in enumerate(steps):
        agent = agents.get(step.agent)
        if step.intent in courtesy and agent is not None and gated(agent, step, specs):
            step.confidence = agent.min_confidence
            sources[i] = "courtesy"


def route(state: TurnState, runtime: Runtime[TurnRun]) -> TurnState:
    text, agents = runtime.context.ctx.text, runtime.context.agents
    reading = state["reading"]
    subject = _subject(state, text)
    if reading.notice:
        steps: list[Step] = []
        sources: dict[int, str] = {}
    elif reading.routed_by in ("clarification", "choice"):  # never on an emergency (judge)
        # The resumed step, then the steps that waited for the answer (dupsafe).
        steps = reading.steps
        sources = dict.fromkeys(range(len(steps)), reading.routed_by)
    elif reading.routed_by in ("directive", "model"):
        directive = reading.understanding.directive
        said = directive.text if directive is not None else text  # without the `#agent`
        steps, sources = _with_emergency(state, agents, said, reading.routed_by)
    else:
        chain, origin = _chain(state, agents, text)
        steps, sources = chain, dict(enumerate(origin))
        _continue_subject(steps, sources, state, agents, subject, text)
        _correct_last_write(steps, sources, state, agents, subject, text)
        _courtesy(steps, sources, agents, reading.specs)
    if not reading.notice and reading.routed_by != "model":  # the model was made to call them
        _obliged(steps, sources, reading, agents, text)
    aside = _set_aside(state, text)
    return {"route": Route(steps=steps, sources=sources, subject=subject, aside=aside)}


def _consulting_intent(agent: Agent, reading: Reading) -> tuple[str, Entities] | None:
    """The intent an obliged agent is consulted with: one the reading ranked for it that clears
    the agent's threshold (a write only then: the message asked for it), else the first of its
    intents that writes nothing — being consulted is not being asked to act. None when the
    agent has nothing to answer with but writes: it is not consulted, and the turn says so."""
    for task in reading.understanding.tasks:
        for intent, score in [(task.intent, task.confidence), *task.candidates]:
            if reading.intent_agents.get(intent) != agent.name:
                continue
            spec = reading.specs.get(intent)
            if score >= agent.min_confidence or spec is None or not spec.writes:
                return intent, task.entities
    reads = [i.name for i in agent.intents.all() if not i.writes]
    return (reads[0], reading.understanding.entities) if reads else None


def _obliged(
    steps: list[Step],
    sources: dict[int, str],
    reading: Reading,
    agents: dict[str, Agent],
    text: str,
) -> None:
    """Each agent the turn must consult and the chain left out gets its step (T3): the intent
    of its own that fits the message best, on the whole message."""
    present = {step.agent for step in steps}
    for obligation in reading.obligations:
        agent = agents.get(obligation.agent)
        if agent is None or agent.name in present:
            continue
        consulting = _consulting_intent(agent, reading)
        if consulting is None:
            continue
        intent, entities = consulting
        index = max([step.index for step in steps], default=-1) + 1
        steps.append(
            Step(
                index=index, intent=intent, agent=agent.name, confidence=1.0, text=text,
                entities=entities, candidates=[], engine=engines.EMBEDDED,
            )
        )  # fmt: skip
        sources[index] = "obligation"
        present.add(agent.name)


# --- delegate, compose ------------------------------------------------------------------------


def delegate(state: TurnState, runtime: Runtime[TurnRun]) -> TurnState:
    """Run the chain: each step through its agent (orchestration/delegate.py). A plan that writes
    or has several steps is recorded first, so a turn cut short by a restart can say what it did
    not get to."""
    plan = [
        {"agent": step.agent, "intent": step.intent, "text": step.text}
        for step in state["route"].steps
    ]
    steps = state["route"].steps
    # One read needs no plan on record: cut short, it has nothing left undone to name.
    if len(steps) > 1 or any(writes(state, step.intent) for step in steps):
        turn_plan_record(turn_id=runtime.context.ctx.turn_id, plan=plan)
    return {"delegation": run_chain(runtime.context, state)}


@dataclasses.dataclass(frozen=True)
class Part:
    """One piece of the reply: whose it is, its text, and whether it already reached the panel."""

    agent: str
    text: str
    streamed: bool = False
    # The orchestrator's note after an agent's verbatim block on a guarded direct line (T2).
    intervention: bool = False


def _summary(step: Step, run: StepRun | None) -> replies.StepSummary:
    if run is None:  # never reached: the turn was handed to a person first
        return replies.StepSummary(step.intent, "", False, False, False, False)
    outcome = run.outcome
    return replies.StepSummary(
        intent=run.step.intent, text=outcome.text, success=outcome.success,
        yielded=outcome.yielded, ran=run.ran, pending=bool(outcome.pending_approvals),
        plan_limited=run.plan_limited, clarifying=outcome.clarify is not None,
    )  # fmt: skip


def _display_order(delegation: Delegation) -> list[Step]:
    """Steps whose text streamed, in the order it was shown; then the others in chain order
    (not the ones waiting for a manager: they have a line of their own)."""
    rank = {index: position for position, index in enumerate(delegation.shown)}
    waiting = {item.step.index for item in delegation.waiting}
    waiting |= {step.index for step in delegation.deferred}
    steps = [step for step in delegation.steps if step.index not in waiting]
    return sorted(steps, key=lambda s: (s.index not in rank, rank.get(s.index, s.index)))


def compose_parts(state: TurnState) -> list[Part]:
    """The reply, piece by piece: preamble, each agent's answer, the orchestrator's lines."""
    reading, delegation = state["reading"], state["delegation"]
    language = reading.language
    if reading.notice:
        return [Part("", reading.notice, streamed=bool(reading.plan.get("direct_reply")))]
    final = {run.step.index: run for run in delegation.final_runs()}
    steps = _display_order(delegation)
    summaries = [_summary(step, final.get(step.index)) for step in steps]
    specs = reading.specs
    parts: list[Part] = []
    if reading.direct_agent:
        # Direct line: the agent's words, verbatim; only a failure gets the orchestrator's line.
        parts = [
            _agent_part(
                step, final.get(step.index), s.text or replies.failure_line(s, language, specs)
            )
            for step, s in zip(steps, summaries, strict=True)
        ]
        if reading.direct_policy != Agent.DirectLine.GUARDED:
            return parts  # strict: nothing of the orchestrator's own
        notes = _closing_lines(delegation, summaries, " ".join(p.text for p in parts), language)
        if len(steps) == 1 and _unfinished_by_model(final.get(steps[0].index), summaries[0]):
            notes.insert(0, Part("", replies.not_done_line(summaries[0], language, specs)))
        return parts + [dataclasses.replace(note, intervention=True) for note in notes]
    plan = reading.plan
    preamble = plan.get("preamble") or ""
    # A preamble that is not an answer ("functions.customer_create: {…}") is left out: the
    # completed event's text replaces what streamed.
    shown = "not_small_talk" not in plan.get("guards", [])
    if preamble and shown and not model_text.problem(preamble):
        parts.append(Part("", preamble, streamed=True))
    if state["signals"].frustrated and not delegation.handoff_ticket:
        parts.append(Part("", replies.frustration_preface(language)))
    said: set[str] = set()
    for step, summary in zip(steps, summaries, strict=True):
        if summary.text and summary.text in said:
            continue  # two agents asking the same ("No encontré ningún cliente «Pérez»…"): once
        if summary.text:
            said.add(summary.text)
            parts.append(_agent_part(step, final.get(step.index), summary.text))
            if len(steps) == 1 and _unfinished_by_model(final.get(step.index), summary):
                # A one-step turn has no done/not-done line: the model's words must not stand
                # alone when the request was not carried out.
                parts.append(Part("", replies.not_done_line(summary, language, specs)))
        elif summary.ran or summary.yielded:
            parts.append(Part(step.agent, replies.failure_line(summary, language, specs)))
    parts.extend(_closing_lines(delegation, summaries, " ".join(p.text for p in parts), language))
    return parts or [Part("", replies.empty_reply(language))]


def _closing_lines(
    delegation: Delegation, summaries: list[replies.StepSummary], said: str, language: str
) -> list[Part]:
    """The orchestrator's own lines after the agents': what was held, what waits, what was
    deferred, what was partly done, the hand-off."""
    parts: list[Part] = []
    unnamed = [number for number in delegation.held if f"#{number}" not in said]
    if unnamed:  # an agent that already named its request is not repeated
        held = PendingAction.objects.filter(pk__in=unnamed).order_by("pk")
        lines = [(action.pk, action.summary_in(language)) for action in held]
        parts.append(Part("", replies.held_line(lines, language)))
    if delegation.waiting:
        intents = [item.step.intent for item in delegation.waiting]
        approvals = sorted({a for item in delegation.waiting for a in item.approvals})
        parts.append(Part("", replies.waiting_line(intents, approvals, language, delegation.specs)))
    if delegation.deferred:
        intents = [step.intent for step in delegation.deferred]
        parts.append(Part("", replies.deferred_line(intents, language, delegation.specs)))
    if line := replies.partial_success_line(summaries, language, delegation.specs):
        parts.append(Part("", line))
    if delegation.stopped:
        parts.append(Part("", replies.handoff_line(delegation.handoff_ticket, language)))
    return parts


def _unfinished_by_model(run: StepRun | None, summary: replies.StepSummary) -> bool:
    """A step whose text is the model's own and whose request was not carried out."""
    if run is None or run.step.engine != engines.LLM or run.fallback:
        return False
    return summary.ran and not (summary.success or summary.pending or summary.clarifying)


def _agent_part(step: Step, run: StepRun | None, text: str) -> Part:
    streamed = run is not None and run.streamed and text == run.outcome.text
    return Part(step.agent, text, streamed=streamed)


def _stream_rest(stream: TextStream, parts: list[Part], *, named: bool) -> None:
    """What did not stream yet goes out now, a few chunks per run of consecutive parts."""
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


def compose(state: TurnState, runtime: Runtime[TurnRun]) -> TurnState:
    run = runtime.context
    reading = state["reading"]
    delegation = state["delegation"]
    language = reading.language
    parts = compose_parts(state)
    ran = [r.step.agent for r in delegation.runs if r.ran and not r.outcome.yielded]
    missed = obligations.unmet(reading.obligations, ran)
    if missed and not reading.notice:  # T3: a turn that skipped an agent it had to consult
        names = [run.agents[o.agent].label(language) if o.agent in run.agents else o.asked
                 for o in missed]  # fmt: skip
        parts.append(Part("", replies.obligation_line(names, language)))
    memory = state["memory"]
    if memory.writes_to_customer():  # what did not stream yet, in the customer's register (P4)
        parts = [
            p
            if p.streamed
            else dataclasses.replace(
                p, text=replies.in_customer_style(p.text, memory.profile, language)
            )
            for p in parts
        ]
    shown: Counter[str] = Counter()  # T4: what is shown never carries a whole card number
    for position, part in enumerate(parts):
        if not part.streamed:
            text, counts = redact_for_display(part.text)
            parts[position], shown = dataclasses.replace(part, text=text), shown + counts
    # Agent names on text events where an agent speaks for itself (direct line, llm engine).
    named = bool(reading.direct_agent) or reading.routed_by == "model"
    _stream_rest(run.stream, parts, named=named)
    labels = {name: a.label(language) for name, a in run.agents.items()}
    # The rows this run stored (the same as a read of the turn's rows, without the read).
    consulted = consulted_of(sorted(run.recorded, key=lambda row: row.pk), labels)
    asked = {(r.step.agent, r.step.intent) for r in delegation.runs if r.outcome.clarify}
    for row in consulted:
        if (row["agent"], row["intent"]) in asked:
            row["clarifying"] = True
    trace = build_trace(run, state, consulted)
    trace["privacy"] = {**engines.privacy_receipt(run.llm, labels), "shown": dict(shown)}  # T4
    if reading.obligations:
        trace["obligations"] = [
            {**o.as_trace(), "met": o not in missed} for o in reading.obligations
        ]
        trace["obligations_failed"] = bool(missed) and not reading.notice
    if reading.direct_agent or reading.direct_line is not None:
        trace["direct_line"] = {
            "agent": reading.direct_agent,
            "policy": reading.direct_policy,
            "sticky": reading.direct_sticky,
            "line": reading.direct_line,  # what this message did to the open line
            "interventions": [part.text for part in parts if part.intervention],
        }
    return {
        "reply": "\n\n".join(part.text for part in parts),
        "parts": [(part.agent, part.text) for part in parts],
        "consulted": consulted,
        "trace": trace,
    }


# --- the held-turn graph: pause, then one decision at a time ----------------------------------


def hold(state: TurnState, runtime: Runtime[TurnRun]) -> TurnState:
    """Pause until a decision on one of the turn's held actions resumes it (nothing before the
    interrupt has effects: the node runs again from its start when it resumes)."""
    pending = pending_approvals(state)
    return {"decision": interrupt({"approvals": pending})}


def resume(state: TurnState, runtime: Runtime[TurnRun]) -> TurnState:
    approval_id = int(state["decision"]["approval_id"])
    return {"followup": run_decision(runtime.context, state, approval_id)}


def after_resume(state: TurnState) -> str:
    """Wait again while a held action of the turn still waits for its decision."""
    return "hold" if pending_approvals(state) else END


def pending_approvals(state: TurnState) -> list[int]:
    """The turn's held actions still to be settled: waiting for a decision, or approved and
    waiting for their own resumption to run them."""
    open_ = (PendingAction.Status.PENDING, PendingAction.Status.APPROVED)
    waiting = PendingAction.objects.filter(pk__in=state["delegation"].held, status__in=open_)
    return sorted(waiting.values_list("pk", flat=True))
