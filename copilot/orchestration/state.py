"""The state of one turn through the orchestrator graph, and the run it belongs to.

`TurnRun` is LangGraph's run context (`context_schema`): the turn's one `TurnContext`
(agents/context.py) plus the live things this process uses to answer it — the engine, the model
client, the text stream. It never becomes state.

`TurnState` holds what the nodes produce. Each key has exactly one writer:

| node        | writes                                       |
|-------------|----------------------------------------------|
| intake      | `memory`, `history`, `pending`               |
| signals     | `signals`                                    |
| understand  | `reading`                                    |
| route       | `route`                                      |
| delegate    | `delegation`                                 |
| compose     | `reply`, `parts`, `consulted`, `trace`       |
| hold        | `decision` (what resumed the paused turn)    |
| resume      | `followup` (what the decision led to)        |
| every node  | `timings` (merged by its reducer)            |

Everything in the state is plain data (the classes are in orchestration/checkpoints.py's allowlist):
a turn that pauses for an approval is checkpointed and may resume in another process.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from agents.base import Chain, Outcome, Step
from agents.context import TurnContext
from agents.events import ConsultedAgent
from agents.models import Agent
from copilot.models import AgentRun, Conversation
from copilot.orchestration.clarify import Pending
from copilot.orchestration.memory import WorkingMemory
from copilot.orchestration.obligations import Obligation
from copilot.orchestration.streaming import TextStream
from llm.client import ChatClient
from nlu.tone import Signals
from nlu.values import IntentSpecs, Understanding


@dataclass(frozen=True)
class TurnRun:
    """What a graph run uses besides its state: the turn's context and its live resources."""

    ctx: TurnContext
    engine: str  # the organisation's effective engine: embedded, llm or hybrid
    llm: ChatClient | None  # the model client, on a model engine with a key
    stream: TextStream  # the turn's one writer of `text` events
    agents: dict[str, Agent] = field(default_factory=dict)  # the enabled agents by name
    consult: tuple[str, ...] = ()  # agents the operator ticked to be consulted (T3)
    # A/B tests (V4): agent name → (test id, arm) this conversation runs under (agents/abtest.py).
    arms: dict[str, tuple[int, str]] = field(default_factory=dict)
    # …and the intents of those arms, which the router learns instead of the live ones.
    arm_intents: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    # The `AgentRun` rows this run stored, in order (the consulted footer reads them here).
    recorded: list[AgentRun] = field(default_factory=list)
    # The conversation as the turn loaded it (None: a graph run without a stored turn).
    conversation: Conversation | None = None


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


@dataclass
class Reading:
    """What `understand` made of the message, and who decided the chain."""

    understanding: Understanding
    language: str
    intent_agents: dict[str, str]  # every intent the router knows → its agent
    # What the registry knows about each intent (writes, order, phrases): the router's specs.
    specs: IntentSpecs = field(default_factory=dict)
    # "embedded", "model", "directive" or "clarification"
    routed_by: str = "embedded"
    # The chain when a directive, a clarification answer or the model decided it (the embedded
    # reading's chain is `understanding.tasks`, which `route` turns into steps).
    steps: list[Step] = field(default_factory=list)
    notice: str = ""  # a reply that replaces the chain (a choice of agents, a usage hint)
    direct_agent: str = ""  # `#agent text`: that agent's reply goes out verbatim
    direct_policy: str = ""  # its agent's direct-line policy: "strict" or "guarded"
    direct_sticky: bool = False  # it came through the conversation's open line
    # The open line after this message: None unchanged, "" closed, else the agent it is open to.
    direct_line: str | None = None
    # Agents this turn must consult (T3: a directive, an agent's rule, the operator's ticks).
    obligations: list[Obligation] = field(default_factory=list)
    plan: dict[str, Any] = field(default_factory=dict)  # the orchestrator model's plan
    fallback: dict[str, str] = field(default_factory=dict)  # where and why the model failed
    pending: Pending | None = None  # the open question, unless this message dropped it
    resumed: bool = False  # this message answered it
    # What the reply to an open question was (orchestration/clarify.py `judge`), "" with none open.
    verdict: str = ""


@dataclass
class Route:
    """The chain to run: steps in dependency order with the signals applied, each step's source
    (classifier, signals, directive, clarification, model, continuation, courtesy), and the
    conversation's subject as the steps start from it."""

    steps: list[Step]
    sources: dict[int, str]
    subject: dict[str, Any]
    # The subject set aside for an organisation-wide question: the conversation keeps it after.
    aside: dict[str, Any] = field(default_factory=dict)


@dataclass
class Waiting:
    """A step that depends on a held one: it runs when those approvals have run, or not at all."""

    step: Step
    approvals: list[int]
    source: str = "classifier"


@dataclass
class Delegation:
    """What running the chain did."""

    steps: list[Step]  # the chain as it ran (a rerouted step replaced)
    runs: list[StepRun]  # every run, yields included, in order
    chain: Chain  # language, the subject at the end, every step's mutations
    yields: int = 0
    handoff_ticket: int | None = None
    stopped: bool = False  # handed to a person: the rest of the chain did not run
    shown: list[int] = field(default_factory=list)  # step indexes in the order their text showed
    held: list[int] = field(default_factory=list)  # approvals the steps filed
    waiting: list[Waiting] = field(default_factory=list)  # steps that wait for them
    # Steps that build on one that asked the operator: they run with the answer (clarify.py).
    deferred: list[Step] = field(default_factory=list)
    specs: IntentSpecs = field(default_factory=dict)  # the registry's intents (the reading's)

    def final_runs(self) -> list[StepRun]:
        """The last run of each step (a rerouted step's yield is superseded by its reroute)."""
        last: dict[int, StepRun] = {}
        for run in self.runs:
            last[run.step.index] = run
        return [last[i] for i in sorted(last)]


@dataclass
class Followup:
    """What one decision on a paused turn led to: its line, the approved call's outcome, the
    waiting steps that ran or were dropped, and the reply built from them."""

    approval_id: int
    status: str  # the action's status after the decision ran: executed, rejected, stale…
    runs: list[StepRun] = field(default_factory=list)
    dropped: list[Step] = field(default_factory=list)
    reply: str = ""
    parts: list[tuple[str, str]] = field(default_factory=list)
    consulted: list[ConsultedAgent] = field(default_factory=list)
    trace: dict[str, Any] = field(default_factory=dict)


def add_timings(left: dict[str, float], right: dict[str, float]) -> dict[str, float]:
    merged = dict(left)
    for name, ms in right.items():
        merged[name] = round(merged.get(name, 0.0) + ms, 3)
    return merged


class TurnState(TypedDict, total=False):
    memory: WorkingMemory
    history: list[dict[str, str]]  # earlier messages the models read (model engines only)
    pending: Pending | None  # the question this message may answer
    signals: Signals
    reading: Reading
    route: Route
    delegation: Delegation
    reply: str
    parts: list[tuple[str, str]]  # (agent or "", text) of the reply, in order
    consulted: list[ConsultedAgent]
    trace: dict[str, Any]
    decision: dict[str, Any]  # {"approval_id": …} handed to the paused turn when it resumes
    followup: Followup
    timings: Annotated[dict[str, float], add_timings]


class SuggestionPayload(TypedDict):
    """A `suggestion` turn's payload (copilot/intake.py `accept_suggestion`)."""

    suggestion_id: int


class UndoPayload(TypedDict):
    """An `undo` turn's payload (copilot/panel.py `undo_request`): the answer whose job is
    undone, the intent that undoes it (the registry's `undone_by`) and that intent's tool."""

    message: int
    job_id: int
    intent: str
    tool: str
