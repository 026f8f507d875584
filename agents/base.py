"""The sub-agent template (O6) shared by every agent in `agents/<name>/`.

A sub-agent step receives the intent the router chose, the segment of the message it came from and
its entities. Its handler resolves the work with data: it loads what it needs through tools
(`Runner.call`), which enforces the agent's tool whitelist, its `max_plan_steps` and the approval
gate, and emits the tool events of the protocol. It returns an `Outcome`: the text for the operator,
whether it succeeded, and the context mutations later steps of the same turn build on.

Replies are written in the language of the message (not the UI's), so handlers give both
versions through `Runner.t(es=..., en=...)`.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

if TYPE_CHECKING:
    from agents.models import Agent
    from agents.registry import ToolResult
    from business.models import Organisation
    from copilot.understanding import Entities

EventSink = Callable[[dict[str, Any]], None]


@dataclass
class Mutation:
    """A structured result of one step that later steps may use (a created customer, a job…)."""

    kind: str
    id: int
    label: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class TurnContext:
    organisation: Organisation
    user: Any
    conversation_id: int | None
    turn_id: str
    now: datetime.datetime
    language: str
    # The conversation's working state: the job / customer under discussion, a pending action…
    state: dict[str, Any]
    emit: EventSink
    mutations: list[Mutation] = field(default_factory=list)


@dataclass
class Step:
    index: int
    intent: str
    agent: str
    confidence: float
    text: str
    entities: Entities
    candidates: list[tuple[str, float]] = field(default_factory=list)
    # "embedded": the intent's handler runs; "llm": the agent's model runs its tool loop on `text`
    # (the query the orchestrator model passed, after the verbatim rules).
    engine: str = "embedded"
    # What the orchestrator model said of earlier turns when the user switched topic (llm only).
    prior_context: str = ""
    # A clarification reply: the step resumes a pending intent (copilot/clarify.py).
    resumed: bool = False


@dataclass
class Clarification:
    """The step could not go on without the operator: what it asks and which detail is missing.

    The conversation keeps it as the pending intent; the reply resumes that intent (O8).
    """

    question: str
    slot: str


@dataclass
class Outcome:
    text: str
    success: bool = True
    mutations: list[Mutation] = field(default_factory=list)
    pending_approvals: list[int] = field(default_factory=list)
    yielded: bool = False
    error: str = ""
    clarify: Clarification | None = None


class PlanLimitReached(Exception):
    """The agent tried to run more tools than its `max_plan_steps` allows."""


class Runner:
    """Runs one sub-agent step's tools on behalf of its agent configuration."""

    def __init__(self, ctx: TurnContext, agent: Agent, step: Step) -> None:
        self.ctx = ctx
        self.agent = agent
        self.step = step
        self.tools_invoked: list[str] = []
        self.plan_steps = 0
        # Set after the conversation's clarification limit (O8): make the best choice, do not ask.
        self.best_effort = False
        # Model tokens this step used (llm engine; the embedded engine uses none).
        self.tokens_in = 0
        self.tokens_out = 0

    @property
    def language(self) -> str:
        return self.ctx.language

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.ctx.organisation.timezone)

    @property
    def local_now(self) -> datetime.datetime:
        """The turn's moment on the organisation's clock."""
        return self.ctx.now.astimezone(self.tz)

    @property
    def today(self) -> datetime.date:
        return self.local_now.date()

    def t(self, *, es: str, en: str) -> str:
        return en if self.ctx.language == "en" else es

    def earlier(self, kind: str) -> Mutation | None:
        """The latest mutation of `kind` produced by an earlier step of this turn."""
        for mutation in reversed(self.ctx.mutations):
            if mutation.kind == kind:
                return mutation
        return None

    def call(self, tool_name: str, **arguments: Any) -> ToolResult:
        """Run a tool through the whitelist, the plan budget and the approval gate."""
        from agents.registry import ToolContext, ToolResult, get_tool
        from approvals.gate import gate_tool_call

        if tool_name not in (self.agent.tools or []):
            return ToolResult(ok=False, data={}, summary="", error=f"tool {tool_name} not enabled")
        if self.plan_steps >= self.agent.max_plan_steps:
            raise PlanLimitReached(tool_name)
        self.plan_steps += 1
        tool = get_tool(tool_name)
        self._emit("tool_start", tool=tool_name, arguments=_jsonable(arguments))
        started = time.perf_counter()
        held = gate_tool_call(self.ctx, self.agent, self.step, tool, arguments)
        if held is not None:
            result = held
        else:
            tool_ctx = ToolContext(
                organisation=self.ctx.organisation,
                user=self.ctx.user,
                conversation_id=self.ctx.conversation_id,
                now=self.ctx.now,
            )
            result = tool.run(tool_ctx, arguments)
        self.tools_invoked.append(tool_name)
        self._emit(
            "tool_result", tool=tool_name, ok=result.ok, summary=result.summary or result.error
        )
        latency = round((time.perf_counter() - started) * 1000, 2)
        self._emit("tool_end", tool=tool_name, latency_ms=latency)
        return result

    def _emit(self, event_type: str, **payload: Any) -> None:
        self.ctx.emit(
            {"type": event_type, "turn_id": self.ctx.turn_id, "agent": self.agent.name, **payload}
        )


def _jsonable(arguments: dict[str, Any]) -> dict[str, object]:
    return {
        key: value if isinstance(value, int | float | bool | None) else str(value)
        for key, value in arguments.items()
    }


Handler = Callable[[Step, Runner], Outcome]
HANDLERS: dict[str, Handler] = {}


def handles(*intents: str) -> Callable[[Handler], Handler]:
    """Register a handler for one or more intents (each intent has exactly one handler)."""

    def decorator(func: Handler) -> Handler:
        for intent in intents:
            if intent in HANDLERS:
                raise RuntimeError(f"intent {intent} already has a handler")
            HANDLERS[intent] = func
        return func

    return decorator
