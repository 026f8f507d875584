"""The state of one turn through the orchestrator graph, and the context it runs for.

`TurnState` is what the nodes pass along (each returns only the keys it changes); `TurnDeps` is
the LangGraph run context (`context_schema`): the organisation, user, conversation and the event
sink, which never become state.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from agents.base import Outcome, Step, TurnContext
from agents.models import Agent
from business.models import Organisation
from copilot.events import ConsultedAgent
from copilot.memory import WorkingMemory
from copilot.models import Conversation
from copilot.signals import Signals
from copilot.understanding.values import Understanding

# Takes any event of copilot/events.py (TypedDicts) and the dicts agents.base emits.
EventSink = Callable[[Mapping[str, object]], None]


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
    # Run once the turn is over, whatever happened (e.g. writing the turn's ModelCall rows).
    on_finish: list[Callable[[], object]] = field(default_factory=list)


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
    # llm engine: its text already reached the panel while it ran (compose must not repeat it);
    # and why the model could not finish it, when the embedded handler answered instead.
    streamed: bool = False
    fallback: str = ""


def add_timings(left: dict[str, float], right: dict[str, float]) -> dict[str, float]:
    merged = dict(left)
    for name, ms in right.items():
        merged[name] = round(merged.get(name, 0.0) + ms, 3)
    return merged


class TurnState(TypedDict, total=False):
    memory: WorkingMemory
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
    # Engines (O2-O4): the organisation's effective engine, the model client when it has one,
    # the cross-turn history the model reads, and who decided the chain: "embedded", "model",
    # "directive" or "clarification".
    engine: str
    llm: Any  # copilot.llm.client.ChatClient | None
    history: list[dict[str, str]]
    routed_by: str
    plan: dict[str, Any]  # the orchestrator model's plan, for the trace
    fallback: dict[str, str]  # {"stage", "kind", "detail"} when the model failed
    pending: Any  # copilot.clarify.Pending | None: the question this message may answer
    resumed: bool
    shown: list[int]  # step indexes in the order their text reached the panel
    stream: Any  # copilot.streaming.TextStream: the turn's one writer of text events
    parts: list[tuple[str, str]]  # (agent or "", text) of the reply, in order
