"""Answering a message in a test the way every entry point does: store it (`accept_message`),
then run the conversation's queued turns (`runner.drain`) — here, in the calling thread — and
read the turn's events back from the conversation's event log."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from copilot import eventlog, runner
from copilot.answering import TurnResult
from copilot.intake import accept_message
from copilot.models import Conversation


@dataclass
class Answered:
    result: TurnResult
    events: list[dict[str, Any]] = field(default_factory=list)  # the run's: thinking … completed
    accepted: dict[str, Any] = field(default_factory=dict)

    def types(self) -> list[str]:
        return [event["type"] for event in self.events]


def answer(conversation: Conversation, user_id: int | None, text: str) -> Answered:
    before = eventlog.last_seq(conversation.pk)
    accepted = accept_message(conversation=conversation, user_id=user_id, text=text)
    drained = runner.drain(conversation.organisation_id, conversation.pk)
    result = next(r for r in drained.results if r.turn_id == accepted.turn_id)
    logged = [dict(e) for e in eventlog.events_after(conversation.pk, before)]
    events = [e for e in logged if e["turn_id"] == accepted.turn_id and e["type"] != "accepted"]
    return Answered(result=result, events=events, accepted=dict(accepted.event))
