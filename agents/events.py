"""The typed event protocol of a copilot turn (S2).

One module defines every event a turn publishes: the tools and the approval gate emit theirs
through `TurnContext.emit` (this is the lowest floor that emits, so it lives here), the turn
service and the graph the rest; the consumer, the panel's script and the tests read the same
names. Each event is a JSON object with a `type`; events of one turn share its `turn_id`.

Every event is appended to the conversation's event log (copilot/models.py `ConversationEvent`)
with a per-conversation sequence number, `seq`, and published to its channel-layer group once
logged: a client that reconnects says the last `seq` it saw and gets exactly what followed (S4).
A turn logs its events a step at a time (copilot/turnlog.py), folding the start/result/end of a
call and the start/end of a step into one event each; `thinking`, `text` and `retract` also go
out live at once, without a `seq` (the logged copy follows at the step's end).

Order for one message: `accepted` as soon as it is stored (every tab shows it), then — when its
turn runs — `thinking` (S3), for each sub-agent step `agent_start`, its
`tool_start`/`tool_result`/`tool_end`, `text` chunks, `approval_requested` when an action is
held, `agent_end`; then `consulted` (from the execution rows, never from generated text), and
last `completed` — or `error` followed by `completed` when the turn failed or was interrupted.
`deferred` says a stored message waits for the service to come back. `retract` marks text
already streamed that the answer replaces; it always comes before the replacement's `text`.

Frames the client sends: `{"type": "message", "text": "...", "client_id": "..."}`.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict


class Sequenced(TypedDict):
    # Set by the event log when the event is published; absent on a refused frame's error.
    seq: NotRequired[int]


class AcceptedEvent(Sequenced):
    """The user's message is stored (and its turn queued): every open tab shows it."""

    type: Literal["accepted"]
    turn_id: str
    message_id: int
    text: str
    client_id: str  # the sender's own id for the frame ("" when it sent none)
    # The conversation's title once this message is stored (the first message names it): every
    # open page updates its conversation list without a reload.
    title: NotRequired[str]


class DeferredEvent(Sequenced):
    """The message is stored but its turn cannot start now (the job queue is unreachable)."""

    type: Literal["deferred"]
    turn_id: str
    message_id: int
    code: str
    message: str


class ThinkingEvent(Sequenced):
    type: Literal["thinking"]
    turn_id: str
    message_id: int


class AgentStartEvent(Sequenced):
    type: Literal["agent_start"]
    turn_id: str
    agent: str
    label: str
    intent: str
    confidence: float
    # As logged, a step's start usually carries its end (copilot/turnlog.py folds the pair).
    success: NotRequired[bool]
    yielded: NotRequired[bool]
    latency_ms: NotRequired[float]
    clarifying: NotRequired[bool]


class AgentEndEvent(Sequenced):
    type: Literal["agent_end"]
    turn_id: str
    agent: str
    intent: str
    success: bool
    yielded: bool
    latency_ms: float
    # The step asked the operator something (O8): not done, and not a failure either.
    clarifying: NotRequired[bool]


class ToolStartEvent(Sequenced):
    type: Literal["tool_start"]
    turn_id: str
    agent: str
    tool: str
    arguments: dict[str, object]


class RecordRef(TypedDict):
    """A record a tool call named in its structured result (agents/step_lines.py)."""

    kind: str  # job, customer, quote, invoice, ticket or approval
    id: int
    label: str


class ToolResultEvent(Sequenced):
    type: Literal["tool_result"]
    turn_id: str
    agent: str
    tool: str
    ok: bool
    summary: str  # the tool's terse English line, for the trace and the models
    # What the call did in the turn's language, for the panel's "what I did" block, and the
    # records its result names (the answer's chips); both from the structured result.
    line: NotRequired[str]
    records: NotRequired[list[RecordRef]]
    # As logged, the call's start and end folded in (copilot/turnlog.py).
    arguments: NotRequired[dict[str, object]]
    latency_ms: NotRequired[float]


class ToolEndEvent(Sequenced):
    type: Literal["tool_end"]
    turn_id: str
    agent: str
    tool: str
    latency_ms: float


class TextEvent(Sequenced):
    type: Literal["text"]
    turn_id: str
    text: str
    agent: NotRequired[str]
    at: NotRequired[int]  # its offset in the turn's streamed text (set by the turn's log)


class RetractEvent(Sequenced):
    """Text this turn already streamed for `agent` ("" for the orchestrator's own words) will
    not be part of the answer: the model failed halfway (`reason` is the failure's kind) or
    answered where an agent had to (`not_small_talk`), and what replaces it follows as new
    `text`. The panel keeps the retracted text, marked, before the replacement."""

    type: Literal["retract"]
    turn_id: str
    agent: str
    reason: str
    at: NotRequired[int]  # how much text the turn had streamed when it retracted


class DirectLineEvent(Sequenced):
    """The conversation's direct line (T2) opened to `agent` (its `label` in the message's
    language) or, with `agent` "", closed: the panel shows or hides its indicator."""

    type: Literal["direct_line"]
    turn_id: str
    agent: str
    label: str


class ReasoningEvent(Sequenced):
    type: Literal["reasoning"]
    turn_id: str
    text: str


class ApprovalRequestedEvent(Sequenced):
    type: Literal["approval_requested"]
    turn_id: str
    approval_id: int
    agent: str
    tool: str
    summary: str


class ApprovalDecidedEvent(Sequenced):
    """A manager decided (or the time ran out on) an action this conversation asked for; the
    turn it names resumes the paused one."""

    type: Literal["approval_decided"]
    turn_id: str
    approval_id: int
    status: str  # approved, rejected or expired
    summary: str
    decided_by: str
    reason: str
    message_id: int  # the note stored in the conversation
    text: str  # that note


class UsageEvent(Sequenced):
    type: Literal["usage"]
    turn_id: str
    tokens_in: int
    tokens_out: int


class ConsultedAgent(TypedDict):
    agent: str
    label: str
    intent: str
    success: bool
    tools: int
    clarifying: NotRequired[bool]  # it asked the operator something (not a failure)


class ConsultedEvent(Sequenced):
    type: Literal["consulted"]
    turn_id: str
    agents: list[ConsultedAgent]


class ErrorEvent(Sequenced):
    type: Literal["error"]
    turn_id: str
    code: str
    message: str


class CompletedEvent(Sequenced):
    type: Literal["completed"]
    turn_id: str
    message_id: int | None
    text: str


Event = (
    AcceptedEvent
    | DeferredEvent
    | ThinkingEvent
    | AgentStartEvent
    | AgentEndEvent
    | ToolStartEvent
    | ToolResultEvent
    | ToolEndEvent
    | TextEvent
    | RetractEvent
    | DirectLineEvent
    | ReasoningEvent
    | ApprovalRequestedEvent
    | ApprovalDecidedEvent
    | UsageEvent
    | ConsultedEvent
    | ErrorEvent
    | CompletedEvent
)

EVENT_TYPES = frozenset(
    {
        "accepted",
        "deferred",
        "thinking",
        "agent_start",
        "agent_end",
        "tool_start",
        "tool_result",
        "tool_end",
        "text",
        "retract",
        "direct_line",
        "reasoning",
        "approval_requested",
        "approval_decided",
        "usage",
        "consulted",
        "error",
        "completed",
    }
)


class ClientMessage(TypedDict):
    type: Literal["message"]
    text: str
    client_id: NotRequired[str]
