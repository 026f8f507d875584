"""How each engine reads an evaluation case (V2 over O2-O4): the chain, agents and entities a
turn would act on. No agent and no tool runs, so nothing is written but the model-call rows.

- *embedded*: the router's reading.
- *llm*: the orchestrator model plans every case through the turn's own
  `orchestration.engines.plan_with_model` (its `ask_<agent>` calls become steps with intents).
- *hybrid*: the embedded reading, unless a step is below its agent's gate
  (`copilot.orchestration.engines.model_reads`).

A model failure counts as the embedded reading, which is what the turn answers with, and the case
says why (`fallback`). Each case is a turn of its own for the model: its own deadline and token
budget, and ModelCall rows under its own turn id, which is how the case's calls, tokens and cost
are counted.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from agents.base import Step
from agents.context import TurnContext
from agents.models import Agent
from agents.selectors import agents_for_org
from business.models import Organisation
from copilot.orchestration import engines
from copilot.orchestration.memory import WorkingMemory
from copilot.orchestration.state import Reading, TurnRun, TurnState
from copilot.orchestration.streaming import TextStream
from evaluation.metrics import Case, Prediction
from llm.client import ModelFailure
from llm.provider import Provider
from llm.selectors import turn_usage
from nlu import Router
from nlu.tone import read_signals
from nlu.values import Context, Entities, Understanding

ENGINES = (engines.EMBEDDED, engines.LLM, engines.HYBRID)


@dataclass
class Reader:
    """One run's engine over one organisation's router, with the model it asks."""

    organisation: Organisation
    router: Router
    context: Context  # the run's reference day
    engine: str = engines.EMBEDDED
    provider: Provider | None = None  # required by llm and hybrid
    agents: dict[str, Agent] = field(default_factory=dict)
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])

    @classmethod
    def open(
        cls,
        organisation: Organisation,
        router: Router,
        context: Context,
        engine: str,
        provider: Provider | None,
    ) -> Reader:
        enabled = agents_for_org(organisation).prefetch_related(None)  # as a turn reads them
        agents = {agent.name: agent for agent in enabled}
        return cls(organisation, router, context, engine, provider, agents)


def read_case(reader: Reader, case: Case, number: int) -> Prediction:
    started = time.perf_counter()
    understanding = reader.router.understand(case.input, reader.context)
    prediction = _embedded(understanding, reader.engine)
    if (
        reader.provider is not None
        and understanding.directive is None
        and engines.model_reads(reader.engine, reader.agents, understanding, reader.router.specs)
    ):
        prediction = _with_model(reader, case.input, understanding, f"{reader.run_id}-{number}")
    prediction.latency_ms = (time.perf_counter() - started) * 1000
    prediction.segments = segments(understanding)
    prediction.routed = [[t.agent, t.intent, round(t.confidence, 4)] for t in understanding.tasks]
    return prediction


def _embedded(understanding: Understanding, engine: str) -> Prediction:
    return Prediction(
        intents=understanding.intents,
        agents=understanding.agents,
        entities=understanding.entities.as_eval_dict(),
        latency_ms=0.0,
        engine=engine,
    )


def segments(understanding: Understanding) -> list[dict[str, Any]]:
    """The router's top candidates per segment (a rule's reading has one segment: the task)."""
    traced = understanding.trace.get("segments")
    if traced is not None:
        return [{"text": s["text"], "candidates": list(s["candidates"])} for s in traced]
    return [{"text": t.text, "candidates": list(t.candidates)} for t in understanding.tasks]


def _with_model(
    reader: Reader, text: str, understanding: Understanding, turn_id: str
) -> Prediction:
    """The orchestrator model's chain, or the embedded one marked with the failure."""
    ctx = TurnContext(
        organisation=reader.organisation, user=None, conversation_id=None,
        now=reader.context.now, turn_id=f"eval-{turn_id}", text=text,
    )  # fmt: skip
    reading = Reading(
        understanding=understanding,
        language=understanding.language,
        intent_agents=dict(reader.router.intents),
        specs=dict(reader.router.specs),
    )
    assert reader.provider is not None
    with engines.model_client(reader.provider, ctx) as client:  # flushes the rows at the end
        run = TurnRun(
            ctx=ctx, engine=reader.engine, llm=client, stream=TextStream(ctx.emit, ctx.turn_id),
            agents=reader.agents,
        )  # fmt: skip
        # A first message of its own conversation: no history, no summary.
        state: TurnState = {
            "memory": WorkingMemory(),
            "history": [],
            "signals": read_signals(text, earlier_user_texts=[]),
        }
        try:
            _plan, steps = engines.plan_with_model(
                state, run, reading, lambda query: _entities(reader, query), run.stream.part("")
            )
        except ModelFailure as exc:
            steps, fallback = [], engines.fallback_record("orchestrator", exc)["kind"]
        else:
            fallback = ""
    prediction = _embedded(understanding, reader.engine)
    if steps:  # none: the model answered small talk itself, so the courtesy reading stands
        prediction.intents = [step.intent for step in steps]
        prediction.agents = [step.agent for step in steps]
        prediction.entities = _step_entities(steps, understanding.entities).as_eval_dict()
    prediction.read_by, prediction.fallback = ("fallback" if fallback else "model"), fallback
    usage = turn_usage(reader.organisation.pk, ctx.turn_id)
    prediction.model_calls, prediction.model_ms = usage.calls, usage.latency_ms
    prediction.tokens_in, prediction.tokens_out = usage.tokens_in, usage.tokens_out
    prediction.cost = usage.cost
    return prediction


def _entities(reader: Reader, query: str) -> Entities:
    return reader.router.understand(query, reader.context).entities


def _step_entities(steps: list[Step], whole: Entities) -> Entities:
    """What the steps run with, the first step's value on a conflict; the whole message's
    reading fills what no step has."""
    merged = Entities()
    for step in steps:
        merged = merged.merged_with(step.entities)
    return merged.merged_with(whole)
