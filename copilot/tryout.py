"""Try an utterance (D1): what the embedded engine understands of a message and what each step's
handler would do, as a dry run that writes nothing.

The reading uses the organisation's registry, or — when the agent page sends its form — the
registry with that page's unsaved edits (its intents, examples, threshold and enabled flag): a
router is trained from them for this one try. Each step that clears its agent's threshold then
runs its real handler over the real tools inside a transaction that is rolled back, so bookings,
tickets, held actions and their notifications (sent on commit) never happen; what the handler
said and each tool call it made are shown.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from agents import intent_gate
from agents.base import HANDLERS, Chain, Runner, Step, load_handlers
from agents.context import TurnContext
from agents.models import Agent
from agents.selectors import agents_for_org, intent_specs, training_examples
from business.models import Organisation
from copilot.orchestration import engines
from copilot.router_cache import router_for, vocabulary_for
from nlu import Router, build_router
from nlu.values import Context, Example, Task

MAX_TEXT = 1000


class NothingToTry(ValueError):
    """The registry (with the page's edits) has too little to train a router on."""


@dataclass(frozen=True)
class AgentEdits:
    """An agent page's form as it is now, saved or not."""

    name: str
    enabled: bool
    min_confidence: float | None
    intents: tuple[tuple[str, str, str], ...]  # (name, examples_es, examples_en), deleted ones out


@dataclass
class TriedCall:
    tool: str
    ok: bool
    summary: str


@dataclass
class TriedStep:
    intent: str
    agent: str
    confidence: float
    threshold: float
    text: str
    candidates: list[tuple[str, float]]
    entities: dict[str, Any]
    passes: bool
    reply: str = ""
    calls: list[TriedCall] = field(default_factory=list)
    held: bool = False
    error: str = ""


@dataclass
class Tried:
    text: str
    language: str
    tier: str
    edited: bool
    steps: list[TriedStep]
    entities: dict[str, Any]
    directive: str
    took_ms: float


def edits_from_form(data: Mapping[str, Any]) -> AgentEdits | None:
    """The agent admin's form (with its intents inline, prefix `intents`) as edits; None when
    the form is not there."""
    name = str(data.get("name") or "").strip()
    if not name:
        return None
    try:
        threshold: float | None = float(str(data.get("min_confidence", "")).replace(",", "."))
    except ValueError:
        threshold = None
    intents: list[tuple[str, str, str]] = []
    try:
        total = min(int(str(data.get("intents-TOTAL_FORMS", "0"))), 200)
    except ValueError:
        total = 0
    for i in range(total):
        prefix = f"intents-{i}-"
        if data.get(prefix + "DELETE"):
            continue
        intent = str(data.get(prefix + "name") or "").strip()
        if intent:
            intents.append(
                (intent, str(data.get(prefix + "examples_es") or ""),
                 str(data.get(prefix + "examples_en") or ""))
            )  # fmt: skip
    return AgentEdits(
        name=name,
        enabled=str(data.get("enabled", "")).lower() in ("on", "true", "1"),
        min_confidence=threshold if threshold is not None and 0 <= threshold <= 1 else None,
        intents=tuple(intents),
    )


def _router_with(organisation: Organisation, edits: AgentEdits) -> Router:
    """A router trained for this try: the registry, with the edited agent as its form says."""
    examples = [
        Example(text=text, intent=intent, agent=agent, lang=lang)
        for text, intent, agent, lang in training_examples(organisation)
        if agent != edits.name
    ]
    if edits.enabled:
        for intent, examples_es, examples_en in edits.intents:
            for lang, block in (("es", examples_es), ("en", examples_en)):
                examples.extend(
                    Example(text=line.strip(), intent=intent, agent=edits.name, lang=lang)
                    for line in block.splitlines()
                    if line.strip()
                )
    names = set(agents_for_org(organisation).values_list("name", flat=True))
    names = (names | {edits.name}) if edits.enabled else (names - {edits.name})
    # The edited agent's saved intents keep their specs (the form tries examples); one it adds
    # has none yet: it reads, depends on nothing and keeps the text's order.
    specs = [s for s in intent_specs(organisation) if s.agent != edits.name or edits.enabled]
    return build_router(examples, agent_names=sorted(names), specs=specs)


def try_utterance(
    organisation: Organisation, user: Any, text: str, *, edits: AgentEdits | None = None
) -> Tried:
    started = time.perf_counter()
    text = text.strip()[:MAX_TEXT]
    try:
        router = (
            _router_with(organisation, edits) if edits is not None else router_for(organisation)
        )
    except ValueError as exc:  # fewer than two intents with examples: nothing to learn from
        raise NothingToTry(str(exc)) from exc
    agents = {agent.name: agent for agent in agents_for_org(organisation)}
    if edits is not None:
        _apply(agents, edits)
    now = timezone.now()
    ctx = TurnContext(
        organisation=organisation, user=user, conversation_id=None, now=now,
        turn_id=str(uuid.uuid4()), message_id=None, text=text, emit=lambda event: None,
    )  # fmt: skip
    understanding = router.understand(
        text,
        Context(
            today=ctx.today,
            now=ctx.local_now,
            tz=organisation.timezone,
            vocabulary=vocabulary_for(organisation),
        ),  # fmt: skip
    )
    steps = [_step(task, agents) for task in understanding.tasks]
    _dry_run(
        ctx, understanding.language, list(zip(steps, understanding.tasks, strict=True)), agents
    )
    return Tried(
        text=text,
        language=understanding.language,
        tier=understanding.tier,
        edited=edits is not None,
        steps=steps,
        entities=understanding.entities.as_eval_dict(),
        directive=understanding.directive.agent if understanding.directive else "",
        took_ms=round((time.perf_counter() - started) * 1000, 1),
    )


def _apply(agents: dict[str, Agent], edits: AgentEdits) -> None:
    agent = agents.get(edits.name)
    if agent is None:
        return
    if not edits.enabled:
        agents.pop(edits.name)
    elif edits.min_confidence is not None:
        agent.min_confidence = edits.min_confidence  # this try only: never saved


def _step(task: Task, agents: dict[str, Agent]) -> TriedStep:
    agent = agents.get(task.agent)
    threshold = agent.min_confidence if agent is not None else 1.0
    return TriedStep(
        intent=task.intent, agent=task.agent, confidence=round(task.confidence, 3),
        threshold=threshold, text=task.text,
        candidates=[(intent, round(score, 3)) for intent, score in task.candidates[:5]],
        entities=task.entities.as_eval_dict(),
        passes=agent is not None and task.confidence >= threshold,
    )  # fmt: skip


def _dry_run(
    ctx: TurnContext,
    language: str,
    steps: list[tuple[TriedStep, Task]],
    agents: dict[str, Agent],
) -> None:
    """Each passing step's handler over the real tools, then everything rolled back."""
    load_handlers()
    with transaction.atomic():
        chain = Chain(language, {})
        for index, (tried, task) in enumerate(steps):
            agent = agents.get(tried.agent)
            handler = HANDLERS.get(tried.intent)
            if not tried.passes or agent is None:
                continue
            if handler is None:  # added in the registry alone: it answers, and writes nothing
                tried.reply = intent_gate.cannot_yet(language)
                continue
            step = Step(
                index=index, intent=tried.intent, agent=tried.agent,
                confidence=tried.confidence, text=tried.text,
                entities=task.entities, candidates=[], engine=engines.EMBEDDED,
            )  # fmt: skip
            runner = Runner(ctx, chain, agent, step)
            try:
                with transaction.atomic():  # a failing handler leaves the others' view intact
                    outcome = handler(step, runner)
                tried.reply = outcome.text
                chain.mutations.extend(outcome.mutations)
            except Exception as exc:  # shown, not raised: this is a try
                tried.error = f"{type(exc).__name__}: {exc}"[:300]
            tried.calls = [
                TriedCall(tool=name, ok=result.ok, summary=result.summary or result.error or "")
                for name, result in runner.results
            ]
            tried.held = bool(runner.held)
        transaction.set_rollback(True)  # nothing of it stays, nothing on commit is sent
