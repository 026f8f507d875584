"""A contact the customer shares on WhatsApp (a `contacts` message, issue 27.1): their name and
phone are a new customer's data.

- While the registration asks the writer for their name, the shared contact's name answers it
  (whatsapp/webhook.py reads it as the message's text, as a location answers the address).
- Otherwise the contact is stored as the customer's message (its data in the trace,
  `whatsapp_contacts`) and offered to the office in a note: name and phone, to add as a customer.
  The customer gets no "I can only read text" line: the contact was read."""

from __future__ import annotations

from typing import Any

from django.utils import translation
from django.utils.translation import gettext

from copilot.models import Conversation, Message
from copilot.services import message_add
from whatsapp import customers, humans
from whatsapp.payload import Incoming


def registering_name(conversation: Conversation) -> bool:
    """The registration is waiting for the writer's name."""
    flow = (conversation.state or {}).get(customers.STATE_KEY)
    return isinstance(flow, dict) and flow.get("step") == customers.NAME


def first_name_of(incoming: Incoming) -> str:
    return next((name for name, _phone in incoming.shared if name), "")


def contacts_offer(conversation: Conversation, incoming: Incoming, meta: dict[str, Any]) -> bool:
    """The shared contacts stored and offered to the office; False when stored before."""
    if conversation.messages.filter(client_id=incoming.message_id).exists():
        return False
    language = humans.language_of(conversation)
    listed = "; ".join(_line(name, phone) for name, phone in incoming.shared) or "—"
    shared = [{"name": name, "phone": phone} for name, phone in incoming.shared]
    with translation.override(language):
        received = gettext("[contact shared on WhatsApp: %(contacts)s]") % {"contacts": listed}
        offer = gettext(
            "The customer shared a contact: %(contacts)s. If it is a new customer, add them "
            "with this name and phone."
        ) % {"contacts": listed}
    message_add(
        conversation=conversation, role=Message.Role.USER, text=received, language=language,
        client_id=incoming.message_id, trace={"whatsapp": meta, "whatsapp_contacts": shared},
    )  # fmt: skip
    humans.note(conversation, offer, language)
    return True


def _line(name: str, phone: str) -> str:
    shown = f"+{phone}" if phone.isdigit() else phone
    return ", ".join(part for part in (name, shown) if part)
