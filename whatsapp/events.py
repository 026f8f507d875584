"""Webhook events that are not messages from the customer (issue 27.1), applied as WhatsApp means
them — none is stored as a customer message, none starts a turn, none is answered:

- a **reaction** is kept on the message it reacts to (`trace["whatsapp_reaction"]`: emoji, event
  id, when); a reaction without an emoji takes it back. The message is the customer's own
  (`Message.client_id`) or one of our replies (`OutgoingMessage.provider_message_id`);
- an **edit** replaces the text of the customer's message it names, the earlier text kept in its
  trace (`whatsapp_edits`); a **revoke** marks it deleted (`whatsapp_deleted`). Meta documents both
  for the WhatsApp Business app ("coexistence"); on Cloud API an edit or a deletion currently
  arrives as `unsupported` (`unsupported.type` "edit") without the message it names: a note;
- a **number change** (`system`, `user_changed_number`) moves the organisation's conversations
  with the old number to the new one (`Conversation.contact`, and the replies still to send), so
  replies go there; an identity change is a note;
- a **call-permission reply** is a note. (`request_welcome`, the customer opening the chat, is
  answered with the welcome message: whatsapp/welcome.py.)

Every lookup is the receiving account's organisation and the sender's own conversations: another
organisation's number never reaches these messages. Notes carry the event's id as `client_id`, so
a redelivery is one note."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db.models import QuerySet

from copilot.models import Conversation, Message
from whatsapp import humans
from whatsapp import replies as wa_replies
from whatsapp.models import OutgoingMessage
from whatsapp.payload import Incoming

logger = logging.getLogger(__name__)

ON_MESSAGES = {"reaction", "edit", "revoke"}  # events about one stored message
NUMBER_CHANGES = {"user_changed_number", "customer_changed_number"}
UNSEEN_CHANGES = {"edit": wa_replies.edited_unseen, "revoke": wa_replies.deleted_unseen,
                  "delete": wa_replies.deleted_unseen}  # fmt: skip


def is_event(incoming: Incoming) -> bool:
    """Not a message from the customer: handled here, never answered."""
    kind, subtype = incoming.type, incoming.subtype
    return (
        kind in ON_MESSAGES | {"system"}
        or (kind == "interactive" and subtype == "call_permission_reply")
        or (kind == "unsupported" and subtype in UNSEEN_CHANGES)
    )


def event_apply(organisation_id: int, incoming: Incoming) -> bool:
    """Apply the event (inside the webhook's transaction); False when there was nothing to apply
    to (an unknown message, a redelivery)."""
    if incoming.type == "reaction":
        return reaction_apply(organisation_id, incoming)
    if incoming.type == "edit":
        return edit_apply(organisation_id, incoming)
    if incoming.type == "revoke":
        return revoke_apply(organisation_id, incoming)
    if incoming.type == "system" and incoming.subtype in NUMBER_CHANGES:
        return number_change(organisation_id, incoming)
    return note_event(organisation_id, incoming)


def reaction_apply(organisation_id: int, incoming: Incoming) -> bool:
    target = _target(organisation_id, incoming)
    if target is None:
        return False
    trace = dict(target.trace or {})
    earlier = trace.get("whatsapp_reaction") or {}
    if int(earlier.get("timestamp") or 0) > incoming.timestamp:
        return False  # a late redelivery of an older reaction
    if incoming.emoji:
        trace["whatsapp_reaction"] = {
            "emoji": incoming.emoji, "id": incoming.message_id, "timestamp": incoming.timestamp,
        }  # fmt: skip
    else:
        trace.pop("whatsapp_reaction", None)
    Message.objects.filter(pk=target.pk).update(trace=trace)
    return True


def edit_apply(organisation_id: int, incoming: Incoming) -> bool:
    """The customer's message takes the edited text (a media message: its new caption)."""
    target = _target(organisation_id, incoming, customers_only=True)
    if target is None or (incoming.subtype in ("", "text") and not incoming.text):
        return False
    trace = dict(target.trace or {})
    edits = list(trace.get("whatsapp_edits") or [])
    if any(edit.get("id") == incoming.message_id for edit in edits):
        return False
    edits.append({"id": incoming.message_id, "timestamp": incoming.timestamp, "was": target.text})
    trace["whatsapp_edits"] = edits
    text = incoming.text[: settings.COPILOT_MAX_MESSAGE_CHARS]
    if incoming.subtype and incoming.subtype != "text":  # a caption: the panel's line stays
        kind = incoming.subtype
        text = wa_replies.media_received(kind, target.language or "es", text)
    Message.objects.filter(pk=target.pk).update(text=text, trace=trace)
    return True


def revoke_apply(organisation_id: int, incoming: Incoming) -> bool:
    target = _target(organisation_id, incoming, customers_only=True)
    if target is None or (target.trace or {}).get("whatsapp_deleted"):
        return False
    deleted = {"id": incoming.message_id, "timestamp": incoming.timestamp}
    Message.objects.filter(pk=target.pk).update(trace={**target.trace, "whatsapp_deleted": deleted})
    return True


def number_change(organisation_id: int, incoming: Incoming) -> bool:
    """The sender's conversations with this organisation now belong to the new number: its
    messages find them, the replies (and those still queued or failed) go there."""
    old, new = incoming.sender, incoming.new_sender
    moved = _conversations(organisation_id, old).select_for_update()
    conversations = list(moved.order_by("-updated_at"))
    if not new or new == old or not conversations:
        logger.info("WhatsApp number change %s: nothing to move", incoming.message_id)
        return False
    unsent = [OutgoingMessage.Status.QUEUED, OutgoingMessage.Status.FAILED]
    OutgoingMessage.objects.filter(
        organisation_id=organisation_id, conversation__in=conversations, to=old, status__in=unsent
    ).update(to=new)
    Conversation.objects.filter(pk__in=[c.pk for c in conversations]).update(contact=new)
    latest = conversations[0]
    language = humans.language_of(latest)
    humans.note(latest, wa_replies.number_changed(old, new, language), language,
                client_id=incoming.message_id)  # fmt: skip
    return True


def note_event(organisation_id: int, incoming: Incoming) -> bool:
    """An identity change, a call-permission reply, an edit or a deletion WhatsApp does not
    say more of: a note in the sender's latest conversation (none: only logged)."""
    conversation = _conversations(organisation_id, incoming.sender).order_by("-updated_at").first()
    text = _note_text(incoming, humans.language_of(conversation) if conversation else "es")
    if conversation is None or not text:
        logger.info("WhatsApp %s %s %s: not recorded", incoming.type, incoming.subtype,
                    incoming.message_id)  # fmt: skip
        return False
    if conversation.messages.filter(client_id=incoming.message_id).exists():
        return False
    humans.note(conversation, text, humans.language_of(conversation), incoming.message_id)
    return True


def _note_text(incoming: Incoming, language: str) -> str:
    if incoming.type == "system":  # an identity change (user_identity_changed, ...)
        return wa_replies.identity_changed(language)
    if incoming.type == "interactive":
        return wa_replies.calls_answered(incoming.answer == "accept", language)
    if incoming.type == "unsupported":
        return UNSEEN_CHANGES[incoming.subtype](language)
    return ""


def _conversations(organisation_id: int, sender: str) -> QuerySet[Conversation]:
    return Conversation.objects.filter(
        organisation_id=organisation_id, channel=Conversation.Channel.WHATSAPP, contact=sender
    )


def _target(
    organisation_id: int, incoming: Incoming, customers_only: bool = False
) -> Message | None:
    """The stored message the event names (locked), in the sender's own conversations with this
    organisation: the customer's (by its WhatsApp id) or, for a reaction, one of our replies."""
    mine = _conversations(organisation_id, incoming.sender)
    found = Message.objects.filter(
        conversation__in=mine, role=Message.Role.USER, client_id=incoming.target_id
    ).values_list("pk", flat=True)
    sent = OutgoingMessage.objects.filter(
        conversation__in=mine, provider_message_id=incoming.target_id
    ).values_list("message_id", flat=True)
    pk = found.first() or (None if customers_only else sent.first())
    if pk is None:
        logger.info("WhatsApp %s %s: message %s not found", incoming.type, incoming.message_id,
                    incoming.target_id)  # fmt: skip
        return None
    return Message.objects.select_for_update().get(pk=pk)
