"""Which engine reads a message, and the model's side of it (O3 llm, O4 hybrid).

- *embedded*: the router (nlu) decides the chain; handlers answer.
- *llm*: the orchestrator model calls one `ask_<agent>` tool per request
  (orchestration/orchestrator.py); each call becomes a step whose agent runs its own model loop
  (agents/llm_agent.py).
- *hybrid*: the embedded reading stands when every step clears its agent's confidence gate; the
  model is asked only when one does not.

The embedded reading is always computed (about a millisecond): it is the fallback when the model
fails — timeout, 429 after retries, a dropped or unfinished stream, an invalid chunk — so the user
always gets a complete answer, and the trace records why (`fallback`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from django.conf import settings

from agents.base import Step
from agents.context import TurnContext
from agents.models import Agent
from business.models import Organisation
from copilot.models import Message
from copilot.orchestration.delegate import LLM
from copilot.orchestration.orchestrator import Plan, agent_tool_schemas, orchestrate
from copilot.orchestration.state import Reading, TurnRun, TurnState
from copilot.orchestration.streaming import Writer
from copilot.router_cache import registry_fingerprint
from copilot.selectors import recent_messages
from llm.client import ChatClient
from llm.provider import Provider, engine_for
from nlu.privacy import ADDRESS, CATEGORIES, Vault
from nlu.values import Entities, IntentSpecs, Understanding, intent_of_role, with_role

logger = logging.getLogger(__name__)

EMBEDDED, HYBRID = "embedded", "hybrid"
__all__ = ["EMBEDDED", "HYBRID", "LLM"]


def open_for(ctx: TurnContext) -> tuple[str, ChatClient | None]:
    """The organisation's effective engine and, on a model engine, the turn's model client (its
    ModelCall rows are written once, by `flush()`, when the turn ends)."""
    engine, provider = engine_for(ctx.organisation)  # embedded without a key
    if provider is None:
        return engine, None
    return engine, model_client(provider, ctx)


def model_client(provider: Provider, ctx: TurnContext) -> ChatClient:
    """A turn's model client: the turn's deadline and token budget, rows written by `flush()`."""
    return guarded_client(
        provider, organisation=ctx.organisation, turn_id=ctx.turn_id,
        conversation_id=ctx.conversation_id, deferred_records=True,
        turn_deadline_s=float(settings.COPILOT_TURN_DEADLINE),
        token_budget=int(settings.COPILOT_TURN_TOKEN_BUDGET),
    )  # fmt: skip


def guarded_client(provider: Provider, **options: Any) -> ChatClient:
    """Every model client the copilot opens — a turn's, the summary's, the profile's — with the
    privacy guard on it (T4): nothing reaches a model unmasked by forgetting to ask for it."""
    return ChatClient(provider, redactor=privacy_vault(), **options)


def privacy_vault() -> Vault | None:
    """The turn's privacy guard (T4, nlu/privacy.py): on unless COPILOT_PRIVACY_GUARD is off;
    street addresses too when COPILOT_PRIVACY_MASK_ADDRESSES is on."""
    if not getattr(settings, "COPILOT_PRIVACY_GUARD", True):
        return None
    categories = tuple(
        c for c in CATEGORIES if c != ADDRESS or settings.COPILOT_PRIVACY_MASK_ADDRESSES
    )
    return Vault(categories=categories)


def privacy_receipt(client: ChatClient | None, labels: dict[str, str]) -> dict[str, Any]:
    """What the turn sent to a model and masked in it (T4): each part that went (the reading of
    the message, an agent's step — `labels` names the agents), and per category distinct values
    and times. A turn that called no model — embedded, or hybrid above every gate — sent nothing
    anywhere, whether or not a client was open."""
    if client is None or not client.sent:
        return {"sent_to_model": False, "masked": {}}
    vault = client.redactor
    masked = vault.receipt() if isinstance(vault, Vault) else {}
    parts = [
        {"purpose": purpose, "agent": agent, "label": labels.get(agent, agent)}
        for purpose, agent in client.sent
    ]
    return {"sent_to_model": True, "guard": vault is not None, "masked": masked, "parts": parts}


def history_limit(*, summarised: bool = False) -> int:
    """How many earlier messages the models read: fewer once the conversation has a summary,
    which the models read instead (O9)."""
    limit = int(getattr(settings, "COPILOT_LLM_HISTORY", 10))
    if summarised:
        limit = min(limit, int(getattr(settings, "COPILOT_LLM_HISTORY_WITH_SUMMARY", 4)))
    return limit


def history_for(
    ctx: TurnContext, *, summarised: bool = False, earlier: Sequence[Message] | None = None
) -> list[dict[str, str]]:
    """The bounded cross-turn history the models read: earlier messages only, oldest first.
    `earlier`: those messages already read, oldest first (at least `history_limit` of them when
    there are that many), so the turn reads them once."""
    limit = history_limit(summarised=summarised)
    if ctx.conversation_id is None or limit <= 0:
        return []
    if earlier is None:
        earlier = recent_messages(ctx.conversation_id, limit, before_id=ctx.message_id)
    return [{"role": m.role, "content": m.text, "agent": m.agent} for m in earlier[-limit:]]


def target(entities: Entities) -> tuple[object, ...]:
    """The records a request is about, as the understanding reads them (not its words)."""
    customer = (entities.customer or "").casefold() or None
    technician = (entities.technician or "").casefold() or None
    return (entities.job_id, customer, technician, entities.date, entities.time, entities.cuit)


def model_reads(
    engine: str, agents: dict[str, Agent], understanding: Understanding, specs: IntentSpecs
) -> bool:
    """Whether the orchestrator model reads a message: always on llm, on hybrid below a gate."""
    if engine == LLM:
        return True
    return engine == HYBRID and needs_model(agents, understanding, specs)


def needs_model(agents: dict[str, Agent], understanding: Understanding, specs: IntentSpecs) -> bool:
    """Hybrid: the model only where the embedded reading is below an agent's gate — courtesy
    included: a farewell read at 0.33 may be something else, and the model answers small talk
    itself (without it, the route answers a weak courtesy reading deterministically)."""
    if not understanding.tasks:
        return True
    outside = with_role(specs, "out_of_scope")  # out of scope for the words: the model may know
    for task in understanding.tasks:
        agent = agents.get(task.agent)
        if task.intent in outside or agent is None or task.confidence < agent.min_confidence:
            return True
    return False


def previous_question(history: list[dict[str, str]]) -> tuple[str, str] | None:
    """The agent whose question the last assistant message ended with (echo follow-up guard)."""
    for message in reversed(history):
        if message["role"] != "assistant":
            continue
        text = message["content"].strip()
        if message.get("agent") and text.endswith("?"):
            return message["agent"], text
        return None
    return None


def plan_with_model(
    state: TurnState,
    run: TurnRun,
    reading: Reading,
    entities_of: Callable[[str], Entities],
    say: Writer,
) -> tuple[Plan, list[Step]]:
    """Ask the orchestrator model; its calls become steps in dependency order. Its preamble
    streams through `say` the moment it arrives.

    Raises `llm.client.ModelFailure`; the caller falls back to the embedded reading.
    """
    assert run.llm is not None  # only a model engine with a client gets here
    agents = run.agents
    understanding = reading.understanding
    # An emergency is never small talk: the model must not close the turn with a reply of its own.
    courtesy = with_role(reading.specs, "courtesy")
    small_talk = (
        bool(understanding.tasks)
        and all(t.intent in courtesy for t in understanding.tasks)
        and not state["signals"].emergency
    )
    history = state.get("history") or []
    plan = orchestrate(
        tools=tool_schemas(run.ctx.organisation, agents),
        client=run.llm,
        agents=agents,
        text=run.ctx.text,
        history=history,
        summary=state["memory"].summary,
        language=reading.language,
        emit_text=say,
        small_talk=small_talk,
        fallback_agent=_fallback_agent(understanding, agents, reading.specs),
        previous_question=previous_question(history),
        today=run.ctx.today.isoformat(),
        target_of=lambda query: target(entities_of(query)),
        required=[o.agent for o in reading.obligations if o.agent],
    )
    steps = [
        Step(
            index=i, intent=call.intent
            or best_intent_for(
                agents[call.agent], understanding, reading.intent_agents, reading.specs
            )[0],
            agent=call.agent, confidence=1.0, text=call.query,
            entities=understanding.entities if call.query == run.ctx.text
            else entities_of(call.query),
            engine=LLM, prior_context=call.prior_context,
        )
        for i, call in enumerate(plan.calls)
        if call.agent in agents
    ]  # fmt: skip
    return plan, in_dependency_order(steps, reading.specs)


# organisation id → (what the schemas were built from, the `ask_<agent>` schemas)
_schemas: dict[int, tuple[tuple[Any, ...], list[dict[str, Any]]]] = {}


def tool_schemas(organisation: Organisation, agents: dict[str, Agent]) -> list[dict[str, Any]]:
    """The orchestrator's tools, rebuilt only when the registry changes (building them reads
    every intent and example: ~14 ms a turn otherwise)."""
    key = (
        registry_fingerprint(organisation),
        tuple((a.pk, a.name, a.description, a.updated_at) for a in agents.values() if a.enabled),
    )
    cached = _schemas.get(organisation.pk)
    if cached is not None and cached[0] == key:
        return cached[1]
    with_intents = Agent.objects.filter(pk__in=[a.pk for a in agents.values()])
    ordered = {a.pk: a for a in with_intents.prefetch_related("intents")}
    schemas = agent_tool_schemas(ordered[a.pk] for a in agents.values() if a.pk in ordered)
    _schemas[organisation.pk] = (key, schemas)
    return schemas


def _fallback_agent(
    understanding: Understanding, agents: dict[str, Agent], specs: IntentSpecs
) -> str:
    """Where a message the model tried to answer itself goes: the embedded reading's agent."""
    courtesy = with_role(specs, "courtesy")
    for task in understanding.tasks:
        if task.intent not in courtesy and task.agent in agents:
            return task.agent
    return "general" if "general" in agents else next(iter(agents), "")


def best_intent_for(
    agent: Agent, understanding: Understanding, intent_agents: dict[str, str], specs: IntentSpecs
) -> tuple[str, Entities]:
    """The named agent's intent that best fits the text (the router's ranking, then the
    agent's first, then the registry's out-of-scope intent for an agent with none): for a
    directive, and for a model call that named the agent but no intent."""
    for task in understanding.tasks:
        ranked = [(task.intent, task.confidence), *task.candidates]
        for intent, _score in ranked:
            if intent_agents.get(intent) == agent.name:
                return intent, task.entities
    own = [i.name for i in agent.intents.all()]
    fallback = intent_of_role(specs, "out_of_scope") or ""
    return (own[0] if own else fallback), understanding.entities


def in_dependency_order(steps: list[Step], specs: IntentSpecs) -> list[Step]:
    """Stable order, except that a step runs after the steps of this turn it depends on (the
    registry's `after`)."""
    remaining = list(steps)
    ordered: list[Step] = []

    def after(intent: str) -> frozenset[str]:
        spec = specs.get(intent)
        return frozenset(spec.after) if spec is not None else frozenset()

    while remaining:
        present = {s.intent for s in remaining}
        ready = [s for s in remaining if not after(s.intent) & (present - {s.intent})]
        pick = (ready or remaining)[0]
        ordered.append(pick)
        remaining.remove(pick)
    for index, step in enumerate(ordered):
        step.index = index
    return ordered


def fallback_record(stage: str, exc: Exception) -> dict[str, str]:
    kind = getattr(exc, "kind", type(exc).__name__)
    detail = str(getattr(exc, "detail", "") or exc)[:300]
    logger.warning("model failed at %s (%s): falling back to the embedded engine", stage, kind)
    return {"stage": stage, "kind": str(kind), "detail": detail}
