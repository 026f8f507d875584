"""A customer opening the chat for the first time from a click-to-chat link or button
(`request_welcome`, issue 27): a note in the conversation (the chat opened; its WhatsApp timestamp
opens the 24-hour window, as a message from them would — whatsapp/outbox.py
`customer_wrote_at`) and the organisation's welcome message, sent through the outbox like every
reply: the account's own text, or a short greeting naming the organisation that says what the
customer can ask, in their register (P4; es-AR voseo by default).

Once per customer: a repeat `request_welcome` (another link, a reinstall) is a note, no second
welcome; nor is one sent while a person handles the conversation. Every lookup is the receiving
organisation's own conversations with this sender (and with the customer it is linked to)."""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.utils.translation import gettext_lazy as _

from common.wording import say
from copilot.models import Conversation, Message
from copilot.services import message_add
from whatsapp import humans, outbox
from whatsapp.channel import styled
from whatsapp.models import WhatsAppAccount
from whatsapp.payload import Incoming

WELCOMED = "whatsapp_welcome"  # the welcome's trace key: the request it answered


def welcome_send(
    conversation: Conversation, incoming: Incoming, account: WhatsAppAccount,
    meta: dict[str, object],
) -> bool:  # fmt: skip
    """The chat opened: noted, and welcomed unless this customer was before. False when this
    request was stored before (a redelivery)."""
    theirs = _their_messages(conversation)
    if theirs.filter(client_id=incoming.message_id).exists():
        return False
    welcomed = theirs.filter(trace__has_key=WELCOMED).exists()
    language = humans.language_of(conversation)
    humans.note(conversation, opened(language), language, client_id=incoming.message_id,
                trace={"whatsapp": meta, outbox.WINDOW_OPENED: True})  # fmt: skip
    if welcomed or conversation.mode == Conversation.Mode.HUMAN:
        return True
    text = account.welcome.strip() or greeting(conversation.organisation.name, language)
    message_add(
        conversation=conversation, role=Message.Role.ASSISTANT, language=language,
        text=styled(conversation, text, language), trace={WELCOMED: incoming.message_id},
    )  # fmt: skip
    return True


def _their_messages(conversation: Conversation) -> QuerySet[Message]:
    same = Q(conversation__contact=conversation.contact)
    if conversation.customer_id is not None:
        same |= Q(conversation__customer_id=conversation.customer_id)
    return Message.objects.filter(
        same, organisation_id=conversation.organisation_id,
        conversation__channel=Conversation.Channel.WHATSAPP,
    )  # fmt: skip


def greeting(organisation: str, language: str) -> str:
    return say(language, _("Hi! This is %(organisation)s. Here you can ask for a service or a "
                           "technician's visit, ask when the technician is coming, ask for a "
                           "quote or about an invoice. What do you need?"),
               organisation=organisation)  # fmt: skip


def opened(language: str) -> str:
    return say(language, _("The customer opened the chat from a WhatsApp link."))
