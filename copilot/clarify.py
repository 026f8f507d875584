"""Clarification with loop prevention (O8), the same in every engine.

A step that cannot go on without the operator (a missing required detail, a reference that
matches several rows) returns `Outcome.clarify`. The turn keeps it in the conversation's state
as the *pending intent*; the next message is read as the answer to that question and resumes the
intent directly — no classifier, no model call — with the original request and the answer
together as the step's text.

Loop prevention, after the clarification-routing reference: the counter grows with every
question asked in a row; once it reaches `COPILOT_MAX_CLARIFICATIONS` (2) the resumed step runs
with `Runner.best_effort` and makes the best choice instead of asking a third time. A reply that
is a directive, an emergency, a "never mind" or plainly a new request drops the pending intent.

The steps of the same chain that build on the one that asked (a booking for the customer whose
registration waits for "¿es el mismo que…?") did not run: they wait in the pending intent
(`then`) and run after it, with the answer, when it resumes.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import astuple, dataclass
from typing import Any

from django.conf import settings

from nlu.normalize import fold

PENDING = "pending_clarification"
# A pending question older than this is stale: the next message is a new request.
TTL = datetime.timedelta(hours=1)
# Replies that drop the pending question instead of answering it.
_DROP = re.compile(
    r"^\s*(?:no\s+)?(?:olvida\w*|deja(?:lo|la)?\s*(?:asi|nomas)?|nada|cancela(?:lo|la)?|"
    r"never\s*mind|forget\s+it|nothing|cancel\s+(?:it|that))\s*[.!]*\s*$"
)
# An answer is short; a long message that the router reads as another request is a new one.
_ANSWER_MAX_WORDS = 8


def max_clarifications() -> int:
    return int(getattr(settings, "COPILOT_MAX_CLARIFICATIONS", 2))


@dataclass(frozen=True)
class Later:
    """A step of the chain deferred until the question is answered."""

    intent: str
    agent: str
    engine: str
    text: str


LATER_KEYS = ("intent", "agent", "engine", "text")  # how a Later is stored, in its order


@dataclass(frozen=True)
class Pending:
    """The intent waiting for the operator's answer."""

    intent: str
    agent: str
    engine: str  # the engine of the step that asked ("embedded" | "llm")
    text: str  # the request as the step saw it
    question: str
    slot: str
    count: int  # questions asked in a row, this one included
    asked_at: str  # ISO
    then: tuple[Later, ...] = ()  # steps that run after it, with the answer

    def as_state(self) -> dict[str, Any]:
        return {
            "intent": self.intent,
            "agent": self.agent,
            "engine": self.engine,
            "text": self.text,
            "question": self.question,
            "slot": self.slot,
            "count": self.count,
            "asked_at": self.asked_at,
            "then": [dict(zip(LATER_KEYS, astuple(later), strict=True)) for later in self.then],
        }

    @property
    def exhausted(self) -> bool:
        """The limit is reached: the resumed step must not ask again."""
        return self.count >= max_clarifications()


def pending_from_state(state: dict[str, Any], now: datetime.datetime) -> Pending | None:
    raw = state.get(PENDING)
    if not isinstance(raw, dict):
        return None
    try:
        pending = Pending(
            intent=str(raw["intent"]),
            agent=str(raw["agent"]),
            engine=str(raw.get("engine") or "embedded"),
            text=str(raw["text"]),
            question=str(raw.get("question", "")),
            slot=str(raw.get("slot", "")),
            count=int(raw.get("count", 1)),
            asked_at=str(raw.get("asked_at", "")),
            then=_deferred(raw.get("then")),
        )
        asked = datetime.datetime.fromisoformat(pending.asked_at)
    except (KeyError, TypeError, ValueError):
        return None
    if asked.tzinfo is None or now - asked > TTL:
        return None
    return pending


def _deferred(raw: Any) -> tuple[Later, ...]:
    """The deferred steps as stored (KeyError / TypeError when they are not)."""
    return tuple(Later(*(str(item[key]) for key in LATER_KEYS)) for item in raw or [])


def is_answer(reply: str, pending: Pending, *, new_request: str | None, emergency: bool) -> bool:
    """Whether `reply` answers the pending question (else it is dropped and read afresh).
    A directive never gets here: `#agent text` is handled before any pending question.

    `new_request` is the intent the embedded router reads in the reply with confidence above
    its agent's gate (None otherwise): a long message confidently about something else is a new
    request, a short one ("el del jueves", "Marta Quiroga", "sí, el primero") is an answer.
    """
    if emergency or _DROP.match(fold(reply)):
        return False
    if new_request and new_request != pending.intent:
        return len(reply.split()) <= _ANSWER_MAX_WORDS
    return True


def resumed_text(pending: Pending, reply: str) -> str:
    """The step's text on resume: the original request, then the answer (entities from both)."""
    return f"{pending.text}\n{reply.strip()}"


def next_pending(
    asked: tuple[str, str, str, str, str, str] | None,
    previous: Pending | None,
    *,
    resumed: bool,
    now: datetime.datetime,
    then: tuple[Later, ...] = (),
) -> Pending | None:
    """What the conversation waits for after this turn.

    `asked` is (intent, agent, engine, text, question, slot) of the step that asked, if one
    did; `then`, the steps deferred until it is answered. The counter continues only when this
    turn was itself the answer to a question.
    """
    if asked is None:
        return None
    intent, agent, engine, text, question, slot = asked
    count = previous.count + 1 if (resumed and previous is not None) else 1
    # On resume the step's text already holds the original request and the answers so far.
    return Pending(intent, agent, engine, text, question, slot, count, now.isoformat(), then)
