"""Working memory (O9): what a turn knows of the conversation before it starts.

A compact summary, the last few messages and the structured state (the customer and job under
discussion, the last intents). Raw history is never loaded whole: a node that needs more asks the
selectors. After the turn, the state absorbs the step mutations so the next message can say
"pasalo al viernes" or "cancelalo" and mean the same job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.base import CUSTOMER_ID, CUSTOMER_LABEL, JOB_ID, JOB_LABEL
from copilot.models import Conversation, Message
from copilot.selectors import recent_messages

RECENT_MESSAGES = 3
SUMMARY_LINES = 8
# What the last turn did (the customer and job keys are the agents': agents/base.py).
LAST_INTENTS = "last_intents"
LAST_AGENT = "last_agent"


@dataclass(frozen=True)
class RecentMessage:
    role: str
    text: str
    agent: str = ""


@dataclass
class WorkingMemory:
    summary: str = ""
    recent: list[RecentMessage] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)

    def earlier_user_texts(self) -> list[str]:
        return [m.text for m in self.recent if m.role == Message.Role.USER]


def load_working_memory(
    conversation: Conversation, *, before_message_id: int | None
) -> WorkingMemory:
    """Summary + last messages before this turn's own message + a copy of the state."""
    recent = [
        RecentMessage(role=m.role, text=m.text, agent=m.agent)
        for m in recent_messages(conversation.pk, RECENT_MESSAGES, before_id=before_message_id)
    ]
    return WorkingMemory(
        summary=conversation.summary, recent=recent, state=dict(conversation.state or {})
    )


def remember_turn(
    state: dict[str, Any], *, intents: Sequence[str], agents: Sequence[str]
) -> dict[str, Any]:
    updated = dict(state)
    if intents:
        updated[LAST_INTENTS] = list(intents)
        updated[LAST_AGENT] = agents[-1] if agents else ""
    return updated


def summarize(state: dict[str, Any], previous: str, user_text: str) -> str:
    """A compact, deterministic summary: what is under discussion and the last few asks.

    The embedded engine needs no model for this; the llm engine reads it as its memory.
    """
    lines: list[str] = []
    if state.get(CUSTOMER_ID):
        lines.append(f"customer: {state.get(CUSTOMER_LABEL, '')} (#{state[CUSTOMER_ID]})")
    if state.get(JOB_ID):
        lines.append(f"job: {state.get(JOB_LABEL, '')} (#{state[JOB_ID]})")
    asks = [line for line in previous.splitlines() if line.startswith("asked: ")]
    intents = ", ".join(state.get(LAST_INTENTS, [])) or "-"
    asks.append(f"asked: {' '.join(user_text.split())[:100]} [{intents}]")
    lines.extend(asks[-(SUMMARY_LINES - len(lines)) :])
    return "\n".join(lines)
