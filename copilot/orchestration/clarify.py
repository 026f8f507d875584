"""Clarification with loop prevention (O8), the same in every engine.

A step that cannot go on without the operator (a missing required detail, a reference that
matches several rows) returns `Outcome.clarify`. The turn keeps it in the conversation's state
as the *pending intent*; the next message is read as the answer to that question and resumes the
intent directly — no classifier, no model call — with the original request and the answer
together as the step's text.

A reply is taken as the answer only when it plausibly answers *that* question (`judge`): of
the type its slot needs (a day for a date, one of the listed options for a choice, yes or no…)
and not a request of its own. Otherwise nothing resumes, so nothing is written from it:
- "olvidalo", "no importa", "never mind", "cancelá eso" drop the question with a short
  acknowledgement (never a cancellation);
- a new request (it opens with another intent's verb, or the router is sure of another intent),
  a directive or an emergency drops it and is understood on its own;
- anything else — "no sé", garbage, words of the wrong type — drops it with a summary of what
  was not done and why (never a ticket, never a write).

Loop prevention, after the clarification-routing reference: the counter grows with every
question asked in a row; once it reaches `COPILOT_MAX_CLARIFICATIONS` (2) the step resumed by
an answer runs with `Runner.best_effort` and makes the best choice instead of asking a third
time ("cualquiera" answers a choice: it asks for exactly that).

The steps of the same chain that build on the one that asked (a booking for the customer whose
registration waits for "¿es el mismo que…?") did not run: they wait in the pending intent
(`then`) and run after it, with the answer, when it resumes.
"""

from __future__ import annotations

import datetime
from dataclasses import astuple, dataclass
from typing import Any, Literal

from django.conf import settings

from nlu import answers
from nlu.values import Entities

PENDING = "pending_clarification"
# A pending question older than this is stale: the next message is a new request.
TTL = datetime.timedelta(hours=1)
# An answer is short; a long message that the router reads as another request is a new one.
_ANSWER_MAX_WORDS = 8

Verdict = Literal["answer", "never_mind", "new_request", "unanswered"]
# What each slot needs of an answer (slots not listed need some content words).
_CHOICE, _DATE, _TIME, _AMOUNT, _DIGITS, _EMAIL, _YES_NO = (
    "choice", "date", "time", "amount", "digits", "email", "yes_no",
)  # fmt: skip
_KINDS = {
    "customer_choice": _CHOICE, "job_choice": _CHOICE, "technician_choice": _CHOICE,
    "vehicle_choice": _CHOICE, "duplicate": _YES_NO, "confirm": _YES_NO, "yes_no": _YES_NO,
    "date": _DATE, "target_date": _DATE, "time": _TIME, "amount": _AMOUNT, "cuit": _DIGITS,
    "phone": _DIGITS, "phone_alt": _DIGITS, "email": _EMAIL,
}  # fmt: skip


# "Which reading did you mean?" (orchestration/write_gate.py): the slot carries the intents offered,
# in the order the question lists them ("reading:assign_vehicle,check_availability").
READING = "reading"


def reading_slot(intents: list[str]) -> str:
    return f"{READING}:{','.join(intents)}"


def readings_of(slot: str) -> list[str]:
    """The intents a reading question offered, in order; [] for any other slot."""
    kind, _, listed = slot.partition(":")
    return [intent for intent in listed.split(",") if intent] if kind == READING else []


def _kind(slot: str) -> str:
    return _CHOICE if readings_of(slot) else _KINDS.get(slot, "")


def asks_yes_or_no(state: dict[str, Any]) -> bool:
    """The conversation's pending question is answered with yes or no ("¿es el mismo cliente?",
    "¿lo confirmo?"): a channel may offer the two as buttons."""
    raw = state.get(PENDING)
    return isinstance(raw, dict) and _kind(str(raw.get("slot", ""))) == _YES_NO


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


@dataclass(frozen=True)
class Heard:
    """What the router read in the reply on its own."""

    entities: Entities
    confident: str | None = None  # an intent it is sure of (above its agent's gate)
    opening: str | None = None  # the intent of the request the reply opens with, if it does
    emergency: bool = False
    # Read, surely, as about something else entirely ("¿quién ganó el partido anoche?"): a new
    # message to answer as such, not a failed answer that only repeats what was not done.
    outside: bool = False


def judge(reply: str, pending: Pending, heard: Heard) -> Verdict:
    """Whether `reply` answers the pending question, and if not, what it is.
    A directive never gets here: `#agent text` is handled before any pending question."""
    if heard.emergency:
        return "new_request"
    if answers.never_mind(reply):
        return "never_mind"
    if answers.garbage(reply) or answers.dont_know(reply):
        return "unanswered"
    short = len(reply.split()) <= _ANSWER_MAX_WORDS
    if short and _points_at(reply, pending):  # "el segundo", "#12", "sí": the verb aside
        return "answer"
    if heard.outside:
        return "new_request"
    if heard.opening and heard.opening != pending.intent:
        return "new_request"  # "buscá al cliente Pérez" is not which job
    fits = fits_slot(reply, pending, heard.entities)
    if heard.confident and heard.confident != pending.intent and not (fits and short):
        return "new_request"
    return "answer" if fits else "unanswered"


def _points_at(reply: str, pending: Pending) -> bool:
    """It names a listed option by place or id, or says yes/no to a yes/no question."""
    kind = _kind(pending.slot)
    return answers.points_at_option(reply, pending.question) or (
        kind == _YES_NO and answers.yes_or_no(reply)
    )


def fits_slot(reply: str, pending: Pending, entities: Entities) -> bool:
    """The reply is of the type the question's slot needs (content aside from its kind)."""
    kind = _kind(pending.slot)
    listed = bool(answers.options_of(pending.question))
    if listed and answers.names_option(reply, pending.question):
        return True  # one of the listed options (free slots of a date question too)
    if kind == _YES_NO:
        return answers.yes_or_no(reply)
    if kind == _CHOICE:  # listed options it does not name are not an answer
        return not listed and bool(answers.content_words(reply))
    if kind == _DATE:
        return bool(entities.date or entities.time) or answers.dateish(reply)
    if kind == _TIME:
        return bool(entities.time) or answers.timeish(reply)
    if kind == _AMOUNT:
        return entities.amount is not None or answers.has_digits(reply)
    if kind == _DIGITS:
        return bool(entities.cuit) or answers.has_digits(reply, at_least=6)
    if kind == _EMAIL:
        return "@" in reply
    return bool(answers.content_words(reply))


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
