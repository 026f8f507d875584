"""A message is stored before anything else: the entry points' side of the turn.

`accept_message` stores the user's message and its queued `Turn` and publishes `accepted`, all in
one transaction; `accept_decision` and `accept_suggestion` do the same for a manager's decision
and an accepted suggestion. Nothing accepted lives only in memory; a frame sent twice with the
same `client_id` is one message. The runner then runs the stored turn (copilot/turn.py)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from agents.events import (
    AcceptedEvent,
    ApprovalDecidedEvent,
    Event,
)
from agents.models import Suggestion
from approvals.models import PendingAction
from business.hygiene import text_problem
from copilot import eventlog
from copilot.models import Conversation, ConversationEvent, Message, Turn
from copilot.orchestration import replies
from copilot.orchestration.state import SuggestionPayload
from copilot.services import (
    conversation_create,
    message_add,
)
from nlu.language import detect_language

logger = logging.getLogger(__name__)


class MessageRefused(ValueError):
    """The text cannot be stored (`code`: "nul" or "surrogate")."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass(frozen=True)
class Accepted:
    turn_id: str
    message_id: int
    event: Event  # `accepted` (or `approval_decided`) as published, with its seq
    duplicate: bool = False  # the same client_id was accepted before: nothing new was stored


def accept_message(
    *,
    conversation: Conversation,
    user_id: int | None,
    text: str,
    client_id: str = "",
    consult: Sequence[str] = (),
    meta: dict[str, Any] | None = None,
) -> Accepted:
    """Store the user's message and its queued turn, and publish `accepted`, in one commit."""
    problem = text_problem(text)
    if problem is not None:
        raise MessageRefused(problem)
    if client_id and (earlier := _accepted_before(conversation, client_id)) is not None:
        return earlier
    try:
        with transaction.atomic():
            message = message_add(
                conversation=conversation, role=Message.Role.USER, text=text,
                language=detect_language(text), client_id=client_id,
                # The agents the operator ticked (T3): the turn must consult them.
                # What the channel said about it (a WhatsApp message's sender and timestamp).
                trace={**(meta or {}), **({"consult": list(consult)} if consult else {})},
            )  # fmt: skip
            turn = Turn.objects.create(
                organisation_id=conversation.organisation_id, conversation=conversation,
                message=message, user_id=user_id, created_at=message.created_at,
            )  # fmt: skip
            event = eventlog.publish(
                conversation.organisation_id,
                conversation.pk,
                AcceptedEvent(
                    type="accepted", turn_id=str(turn.pk), message_id=message.pk, text=text,
                    client_id=client_id, title=conversation.title,
                ),
            )  # fmt: skip
    except IntegrityError:
        # The same frame from two sockets at once: the other one stored it.
        earlier = _accepted_before(conversation, client_id) if client_id else None
        if earlier is None:
            raise
        return earlier
    return Accepted(turn_id=str(turn.pk), message_id=message.pk, event=event)


def _accepted_before(conversation: Conversation, client_id: str) -> Accepted | None:
    message = (
        Message.objects.filter(conversation=conversation, client_id=client_id)
        .select_related("turn")
        .first()
    )
    if message is None:
        return None
    turn_id = str(message.turn.pk)
    row = ConversationEvent.objects.filter(
        conversation=conversation, turn_id=turn_id, type="accepted"
    ).first()
    event = AcceptedEvent(
        type="accepted", turn_id=turn_id, message_id=message.pk, text=message.text,
        client_id=client_id,
    )  # fmt: skip
    if row is not None:
        event["seq"] = row.seq
    return Accepted(turn_id=turn_id, message_id=message.pk, event=event, duplicate=True)


def accept_decision(action: PendingAction) -> Accepted | None:
    """A manager's decision (or the expiry) on a held action enters its conversation like a
    message: a note, a queued turn that will resume the paused one, and `approval_decided`.
    None when the action belongs to no conversation."""
    if action.conversation_id is None:
        return None
    conversation = Conversation.objects.filter(
        pk=action.conversation_id, organisation_id=action.organisation_id
    ).first()
    if conversation is None:
        return None
    paused = Turn.objects.filter(pk=action.turn_id).first() if _is_uuid(action.turn_id) else None
    language = (paused.message.language if paused is not None else "") or "es"
    decider = action.decided_by
    name = (decider.get_full_name() or decider.get_username()) if decider is not None else ""
    note = replies.decision_note(
        status=str(action.status), approval_id=action.pk, summary=action.summary_in(language),
        decided_by=name, language=language,
    )  # fmt: skip
    with transaction.atomic():
        message = message_add(
            conversation=conversation, role=Message.Role.SYSTEM, text=note, language=language,
        )  # fmt: skip
        turn = Turn.objects.create(
            organisation_id=conversation.organisation_id, conversation=conversation,
            message=message, kind=Turn.Kind.DECISION, resumes=paused, approval_id=action.pk,
            # The approved call acts for the person who asked for it (the records' history
            # names them); who decided is in the action's audit trail.
            user_id=action.requested_by_id,
            created_at=message.created_at,
        )  # fmt: skip
        event = eventlog.publish(
            conversation.organisation_id, conversation.pk,
            ApprovalDecidedEvent(
                type="approval_decided", turn_id=str(turn.pk), approval_id=action.pk,
                status=str(action.status), summary=action.summary_in(language),
                decided_by=name, reason=action.decision_reason, message_id=message.pk,
                text=note,
            ),
        )  # fmt: skip
    return Accepted(turn_id=str(turn.pk), message_id=message.pk, event=event)


def accept_suggestion(
    suggestion: Suggestion, *, user: Any, note: str, language: str
) -> Conversation:
    """An accepted suggestion enters the chat like a message: a note (what was accepted) in a
    new conversation of the person who accepted it, and a queued turn of kind `suggestion` that
    runs its proposed call. The caller hands the conversation to a runner once this commits."""
    with transaction.atomic():
        conversation = conversation_create(
            organisation=suggestion.organisation, user=user, title=note
        )
        message = message_add(
            conversation=conversation, role=Message.Role.SYSTEM, text=note, language=language,
            trace={"suggestion_id": suggestion.pk},
        )  # fmt: skip
        payload: SuggestionPayload = {"suggestion_id": suggestion.pk}
        turn = Turn.objects.create(
            organisation_id=conversation.organisation_id, conversation=conversation,
            message=message, user_id=user.pk, created_at=message.created_at,
            kind=Turn.Kind.SUGGESTION, payload=payload,
        )  # fmt: skip
        Suggestion.objects.filter(pk=suggestion.pk).update(
            conversation_id=conversation.pk, turn_id=str(turn.pk)
        )
        eventlog.publish(
            conversation.organisation_id, conversation.pk,
            AcceptedEvent(type="accepted", turn_id=str(turn.pk), message_id=message.pk,
                          text=note, client_id=""),
        )  # fmt: skip
    return conversation


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True
