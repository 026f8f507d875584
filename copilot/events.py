"""The typed event protocol of a copilot turn (S2).

One module defines every event the server sends over the websocket (and any other channel that
streams a turn); the consumer, the turn runner and the tests import it. Each event is a JSON object
with a `type` field; events of one turn share its `turn_id`.

Order within a turn: `thinking` first (S3: sent before any work), then for each sub-agent step
`agent_start`, its `tool_start`/`tool_result`/`tool_end`, `text` chunks, `approval_requested`
when an action is held, `agent_end`; then `consulted` (built from the execution rows, never from
generated text), and last `completed` — or `error` followed by `completed` when the turn failed.

Frames the client sends: `{"type": "message", "text": "...", "client_id": "..."}`.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict


class ThinkingEvent(TypedDict):
    type: Literal["thinking"]
    turn_id: str
    message_id: int


class AgentStartEvent(TypedDict):
    type: Literal["agent_start"]
    turn_id: str
    agent: str
    label: str
    intent: str
    confidence: float


class AgentEndEvent(TypedDict):
    type: Literal["agent_end"]
    turn_id: str
    agent: str
    intent: str
    success: bool
    yielded: bool
    latency_ms: float
    # The step asked the operator something (O8): not done, and not a failure either.
    clarifying: NotRequired[bool]


class ToolStartEvent(TypedDict):
    type: Literal["tool_start"]
    turn_id: str
    agent: str
    tool: str
    arguments: dict[str, object]


class ToolResultEvent(TypedDict):
    type: Literal["tool_result"]
    turn_id: str
    agent: str
    tool: str
    ok: bool
    summary: str


class ToolEndEvent(TypedDict):
    type: Literal["tool_end"]
    turn_id: str
    agent: str
    tool: str
    latency_ms: float


class TextEvent(TypedDict):
    type: Literal["text"]
    turn_id: str
    text: str
    agent: NotRequired[str]


class ReasoningEvent(TypedDict):
    type: Literal["reasoning"]
    turn_id: str
    text: str


class ApprovalRequestedEvent(TypedDict):
    type: Literal["approval_requested"]
    turn_id: str
    approval_id: int
    agent: str
    tool: str
    summary: str


class ApprovalDecidedEvent(TypedDict):
    type: Literal["approval_decided"]
    turn_id: str
    approval_id: int
    status: str


class UsageEvent(TypedDict):
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


class ConsultedEvent(TypedDict):
    type: Literal["consulted"]
    turn_id: str
    agents: list[ConsultedAgent]


class ErrorEvent(TypedDict):
    type: Literal["error"]
    turn_id: str
    code: str
    message: str


class CompletedEvent(TypedDict):
    type: Literal["completed"]
    turn_id: str
    message_id: int | None
    text: str


Event = (
    ThinkingEvent
    | AgentStartEvent
    | AgentEndEvent
    | ToolStartEvent
    | ToolResultEvent
    | ToolEndEvent
    | TextEvent
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
        "thinking",
        "agent_start",
        "agent_end",
        "tool_start",
        "tool_result",
        "tool_end",
        "text",
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
