"""A person takes a WhatsApp conversation over ("humano" mode) and hands it back (issue 14.3).

- The customer asks for a person (`hand_over`): the conversation turns to human mode, the
  customer is told in one line that a person will answer, and every member of the organisation
  hears it live (group `whatsapp.o<org>`, the socket in whatsapp/consumers.py
  `WhatsAppConsumer`, the banner in static/js/whatsapp.js). The one word "humano" / "human" is
  caught by the webhook before any turn (`customers.asks_for_human`, `human_requested`); any
  other phrasing ("¿me pasás con alguien de la oficina?", "put me through to someone") is read
  by the understanding layer as the registry's escalation intent, and the turn hands over
  instead of running it (whatsapp/channel.py).
- A member takes it over from the chat page (`take_over`): the copilot stops answering — what
  the customer writes is stored and shown live (`incoming_store`), no turn runs — and the member
  replies as themselves (`operator_reply`: an assistant message signed by them, sent through the
  outbox), until they hand it back (`hand_back`).

Every change is a note in the conversation and an event in its log, so every open page shows it.
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from agents.events import AcceptedEvent, CompletedEvent
from common.sockets import send_to_group
from common.wording import say
from copilot import eventlog
from copilot.models import Conversation, Message
from copilot.services import message_add
from nlu.language import detect_language

logger = logging.getLogger(__name__)

GROUP_MESSAGE = "whatsapp.changed"


class NotYours(Exception):
    """The conversation is not in human mode under this member (a reply refused)."""


def group_name(organisation_id: int) -> str:
    return f"whatsapp.o{int(organisation_id)}"


def _who(user: AbstractBaseUser) -> str:
    full = getattr(user, "get_full_name", lambda: "")()
    return str(full or user.get_username())


def tell(conversation: Conversation, event: str, **extra: Any) -> None:
    """Once committed: the organisation's members hear what happened to the conversation."""
    message = {
        "type": GROUP_MESSAGE, "event": event, "conversation_id": conversation.pk,
        "title": conversation.title or f"+{conversation.contact}", "mode": conversation.mode,
        **extra,
    }  # fmt: skip
    group = group_name(conversation.organisation_id)
    transaction.on_commit(lambda: send_to_group(group, message))


def incoming_store(
    conversation: Conversation,
    text: str,
    client_id: str,
    meta: dict[str, Any],
    notify: bool = True,
) -> Message | None:
    """A customer's message while a person handles the conversation: stored and shown live, no
    turn. None when it was stored before (a redelivery)."""
    if Message.objects.filter(conversation=conversation, client_id=client_id).exists():
        return None
    with transaction.atomic():
        message = message_add(
            conversation=conversation, role=Message.Role.USER, text=text, client_id=client_id,
            language=detect_language(text), trace={"whatsapp": meta, "human_mode": True},
        )  # fmt: skip
        eventlog.publish(
            conversation.organisation_id, conversation.pk,
            AcceptedEvent(type="accepted", turn_id="", message_id=message.pk, text=text,
                          client_id=client_id),
        )  # fmt: skip
        if notify:
            tell(conversation, "message", text=text[:200])
    return message


def human_requested(
    conversation: Conversation, text: str, client_id: str, meta: dict[str, Any], language: str
) -> Message | None:
    """The customer asked for a person in one word ("humano"): human mode, their message stored,
    a short answer sent, and the members told. None when the message was stored before."""
    with transaction.atomic():
        message = incoming_store(conversation, text, client_id, meta, notify=False)
        if message is None:
            return None
        hand_over(conversation, text)
        _say(conversation, handing_over(language), language, {"human_requested": True})
    return message


def hand_over(conversation: Conversation, text: str) -> None:
    """Human mode: the copilot stops answering, and every member of the organisation hears, live,
    which conversation wants a person (the customer's words with it)."""
    Conversation.objects.filter(pk=conversation.pk).update(
        mode=Conversation.Mode.HUMAN, updated_at=timezone.now()
    )
    conversation.mode = Conversation.Mode.HUMAN
    tell(conversation, "human_requested", text=text[:200])


def handing_over(language: str) -> str:
    """The one line the customer reads when a person takes over."""
    return say(
        language,
        _("I'm passing you to a person from the team: they will answer you here shortly."),
    )


def take_over(conversation: Conversation, user: AbstractBaseUser) -> None:
    """The member handles the conversation: the copilot stops answering it."""
    with transaction.atomic():
        Conversation.objects.filter(pk=conversation.pk).update(
            mode=Conversation.Mode.HUMAN, taken_by_id=user.pk, updated_at=timezone.now()
        )
        conversation.mode, conversation.taken_by_id = Conversation.Mode.HUMAN, user.pk
        language = language_of(conversation)
        note(conversation, say(
            language, _("%(who)s took the conversation over: the copilot does not answer."),
            who=_who(user),
        ), language)  # fmt: skip
        tell(conversation, "taken", by=_who(user))


def hand_back(conversation: Conversation, user: AbstractBaseUser) -> None:
    """The copilot answers the customer's next messages again."""
    with transaction.atomic():
        Conversation.objects.filter(pk=conversation.pk).update(
            mode=Conversation.Mode.COPILOT, taken_by=None, updated_at=timezone.now()
        )
        conversation.mode, conversation.taken_by = Conversation.Mode.COPILOT, None
        language = language_of(conversation)
        note(conversation, say(
            language, _("%(who)s handed the conversation back to the copilot."), who=_who(user)
        ), language)  # fmt: skip
        tell(conversation, "handed_back", by=_who(user))


def operator_reply(conversation: Conversation, user: AbstractBaseUser, text: str) -> Message:
    """The member's own answer to the customer, through the outbox (NotYours when the
    conversation is not in human mode under them)."""
    with transaction.atomic():
        current = Conversation.objects.select_for_update().get(pk=conversation.pk)
        if current.mode != Conversation.Mode.HUMAN or current.taken_by_id != user.pk:
            raise NotYours
        message = _say(
            conversation, text, language_of(conversation),
            {"operator": {"id": user.pk, "name": _who(user)}},
        )  # fmt: skip
    return message


def _say(conversation: Conversation, text: str, language: str, trace: dict[str, Any]) -> Message:
    """An answer the customer gets (the outbox sends it) that every open page shows at once."""
    message = message_add(
        conversation=conversation, role=Message.Role.ASSISTANT, text=text, language=language,
        trace=trace,
    )  # fmt: skip
    eventlog.publish(
        conversation.organisation_id, conversation.pk,
        CompletedEvent(type="completed", turn_id=f"human-{message.pk}", message_id=message.pk,
                       text=text),
    )  # fmt: skip
    return message


def note(
    conversation: Conversation, text: str, language: str, client_id: str = "",
    trace: dict[str, Any] | None = None,
) -> Message:  # fmt: skip
    """A note in the conversation (what happened outside the chat), shown at once on every open
    page; the customer never gets it."""
    message = message_add(
        conversation=conversation, role=Message.Role.SYSTEM, text=text, language=language,
        client_id=client_id, trace=trace,
    )  # fmt: skip
    eventlog.publish(
        conversation.organisation_id, conversation.pk,
        CompletedEvent(type="completed", turn_id=f"note-{message.pk}", message_id=message.pk,
                       text=text),
    )  # fmt: skip
    return message


def language_of(conversation: Conversation) -> str:
    """The language the customer last wrote in; before they wrote (a chat opened from a link),
    the organisation's own."""
    return (
        (
            Message.objects.filter(conversation=conversation, role=Message.Role.USER)
            .exclude(language="")
            .values_list("language", flat=True)
            .last()
        )
        or conversation.organisation.language
        or "es"
    )
