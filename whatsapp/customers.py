"""Customers as users on WhatsApp (issue 14.3): who is writing, a short registration for an
unknown number, and what a customer may be shown.

- `match_customer`: the sender's wa_id against the organisation's customers' phones, both in
  E.164 (`business.validators.normalise_phone`); an Argentine mobile is matched with and without
  the "9" WhatsApp puts after the country code.
- `registration_step`: an unknown number is asked for a name, then an address (or "saltar" /
  "skip"); the customer is created through the customer agent's `customer_create` tool and the
  conversation linked to them. The flow's state is the conversation's (`state["registration"]`),
  so a reload, another process or a redelivery sees the same step; a bad answer asks again.
- `for_customer`: every reply a customer reads goes through the privacy guard's detectors:
  phones, emails, CUITs, DNIs, cards and addresses that are not the customer's own are hidden;
  and so are the names of the organisation's other customers; the panel's PDF links become
  WhatsApp documents (`documents_wanted`).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from agents.base import Chain, Runner
from agents.base import Step as Step_
from agents.customer.tools import CustomerCreated
from agents.customer_scope import NOT_FOR_CUSTOMERS
from business.models import Customer, Invoice, Quote
from business.selectors import scoped
from business.validators import normalise_phone
from common.text import fold
from common.wording import say
from copilot.models import Conversation, Message
from copilot.orchestration.state import TurnRun
from copilot.services import conversation_state_update, message_add
from nlu import privacy
from nlu.values import Entities
from whatsapp import voice

logger = logging.getLogger(__name__)

CUSTOMER_AGENT = "customer"

STATE_KEY = "registration"
NAME, ADDRESS = "name", "address"
MAX_ASKS = 3  # wrong answers to one question before the flow says how to reach a person

_SKIP = {"saltar", "salteo", "omitir", "no", "skip", "no gracias", "prefiero no", "ninguna",
         "none", "later", "despues", "después", "mas tarde", "más tarde"}  # fmt: skip
_NAME_LEAD = re.compile(
    r"^(?:hola[,!. ]*)?(?:soy|me llamo|mi nombre es|my name is|i am|i'm|it's|its)\s+", re.I
)
_PDF_LINK = re.compile(r"\n?PDF: /(invoices|quotes)/(\d+)/pdf/")
_WANTS_DOCUMENT = re.compile(
    r"\b(factura|facturas|presupuesto|presupuestos|comprobante|pdf|invoice|invoices|quote|"
    r"quotes|receipt|bill)\b"
)
_SEND_VERB = re.compile(
    r"\b(mand\w*|envi\w*|pas\w*|quiero|necesito|dame|ver|send|need|want|get|share|copia|copy)\b"
)
HUMAN_WORDS = {"humano", "human", "persona", "una persona", "operador", "operadora", "agente",
               "hablar con una persona", "hablar con un humano", "quiero hablar con una persona",
               "talk to a person", "talk to a human", "a person", "agent"}  # fmt: skip


def wa_variants(wa_id: str) -> set[str]:
    """The E.164 forms a WhatsApp sender may be stored under ("" → none)."""
    digits = re.sub(r"\D", "", wa_id or "")
    if not digits:
        return set()
    try:
        phone = normalise_phone("+" + digits)
    except ValidationError:
        return set()
    found = {phone}
    if phone.startswith("+549") and len(phone) == 14:  # mobile as WhatsApp writes it
        found.add("+54" + phone[4:])
    elif phone.startswith("+54") and len(phone) == 13:
        found.add("+549" + phone[3:])
    return found


def match_customer(organisation_id: int, wa_id: str) -> Customer | None:
    """The organisation's customer with this number (main or other phone); None when nobody or
    more than one has it (never a guess)."""
    variants = wa_variants(wa_id)
    if not variants:
        return None
    found = list(
        Customer.objects.filter(organisation_id=organisation_id)
        .filter(Q(phone__in=variants) | Q(phone_alt__in=variants))
        .order_by("pk")[:2]
    )
    return found[0] if len(found) == 1 else None


def asks_for_human(text: str) -> bool:
    """ "humano", "human", "quiero hablar con una persona": the customer asks for a person."""
    words = fold(re.sub(r"[^\w\s]", " ", text)).split()
    return " ".join(words) in {fold(w) for w in HUMAN_WORDS}


# --- registration -------------------------------------------------------------------------


@dataclass
class Step:
    """What one message did to the registration: the reply, the state to keep, and, once
    complete, what to create (`create`)."""

    reply: str
    state: dict[str, Any] | None
    create: dict[str, str] = field(default_factory=dict)


def registration_start(text: str, language: str, organisation_name: str) -> Step:
    return Step(
        say(
            language,
            _(
                "Hello! This is %(organisation)s's assistant. I don't have your number on "
                "file yet: what is your full name?"
            ),
            organisation=organisation_name,
        ),
        {"step": NAME, "language": language, "pending": text[:1000], "asks": 0},
    )


def registration_step(flow: dict[str, Any], text: str) -> Step:
    """The next step of a registration under way, given the customer's answer."""
    language = str(flow.get("language") or "es")
    answer = " ".join(text.split())
    if flow.get("step") == NAME:
        name = _name_in(answer)
        if name is None:
            return _again(flow, language, _ask_name_again(language))
        return Step(
            say(
                language,
                _(
                    "Thank you, %(name)s. What is the address where we should do the work (street "
                    'and number, and town)? If you\'d rather not give it now, write "skip".'
                ),
                name=name,
            ),
            {**flow, "step": ADDRESS, "name": name, "asks": 0},
        )
    if fold(answer).strip(" .!") in {fold(s) for s in _SKIP}:
        return Step("", None, {"name": str(flow.get("name") or "")})
    street, city = _address_in(answer)
    if not street:
        return _again(flow, language, _ask_address_again(language))
    return Step("", None, {"name": str(flow.get("name") or ""), "street": street, "city": city})


def asks_for_address(conversation: Conversation) -> bool:
    """The registration is waiting for the customer's address."""
    flow = (conversation.state or {}).get(STATE_KEY)
    return isinstance(flow, dict) and flow.get("step") == ADDRESS


def _again(flow: dict[str, Any], language: str, question: str) -> Step:
    asks = int(flow.get("asks") or 0) + 1
    if asks >= MAX_ASKS:
        question += " " + say(language, _('If you would rather talk to a person, write "human".'))
    return Step(question, {**flow, "asks": asks})


def _ask_name_again(language: str) -> str:
    return say(
        language, _('I did not catch your name. Could you write it? For example: "Martha Gomez".')
    )


def _ask_address_again(language: str) -> str:
    return say(
        language,
        _(
            'That does not look like an address. Write the street and number (e.g. "Av. Mitre '
            '1234, Avellaneda"), or "skip" to go on without it.'
        ),
    )


def _name_in(answer: str) -> str | None:
    """A person's or company's name: letters (and a few signs), 2 to 80 characters, at most
    six words; not a question, not a number, not a request."""
    name = _NAME_LEAD.sub("", answer).strip(" .!¡,;")
    if not 2 <= len(name) <= 80 or len(name.split()) > 6 or "?" in name:
        return None
    if re.search(r"\d", name) or not re.fullmatch(r"[^\W\d_][\w .'&,-]*", name):
        return None
    if fold(name) in {fold(s) for s in _SKIP} or asks_for_human(name):
        return None
    if _WANTS_DOCUMENT.search(fold(name)) or fold(name).split()[0] in _REQUEST_WORDS:
        return None
    return name.title() if name == name.lower() else name


_REQUEST_WORDS = {"quiero", "necesito", "hola", "buenas", "buen", "tengo", "hi", "hello", "want",
                  "need", "can", "could", "please", "por", "favor", "si", "yes", "ok", "gracias",
                  "thanks", "thank", "chau", "bye", "dale", "listo", "no", "que", "what", "how",
                  "como", "cuando", "when", "donde", "where"}  # fmt: skip


def _address_in(answer: str) -> tuple[str, str]:
    """(street and number, town) from "Av. Mitre 1234, Avellaneda"; ("", "") when there is no
    street with a door number."""
    first, _comma, rest = answer.partition(",")
    if not re.search(r"[^\W\d_]{2,}", first) or not re.search(r"\b\d{1,5}\b", first):
        return "", ""
    if len(answer) > 200:
        return "", ""
    return first.strip()[:200], rest.strip(" .")[:100]


def registered(name: str, language: str) -> str:
    return say(language, _("Done, %(name)s! You are registered now."), name=name)


def registration_failed(language: str) -> str:
    return say(
        language,
        _("I could not complete your registration now. Someone from the team will write to you."),
    )


def how_can_i_help(language: str) -> str:
    return say(language, _("How can I help you?"))


# --- what a customer reads ------------------------------------------------------------------


@dataclass(frozen=True)
class Document:
    kind: str  # "invoice" or "quote"
    id: int


def documents_wanted(text: str) -> str | None:
    """ "mandame la factura", "send me the quote": "invoice" or "quote" (None: not asked)."""
    folded = fold(text)
    found = _WANTS_DOCUMENT.search(folded)
    if found is None or _SEND_VERB.search(folded) is None and "?" not in text:
        return None
    return "quote" if found.group(1).startswith(("presupuesto", "quote")) else "invoice"


def for_customer(
    text: str, customer: Customer | None, language: str
) -> tuple[str, list[Document], int]:
    """The reply as the customer reads it: the panel's PDF links taken out (the documents they
    named, to be sent as WhatsApp documents) and every personal datum that is not the
    customer's own hidden. Returns (text, documents, how many values were hidden)."""
    linked = [
        Document("invoice" if kind == "invoices" else "quote", int(pk))
        for kind, pk in _PDF_LINK.findall(text)
    ]
    text = _PDF_LINK.sub("", text)
    text = voice.without_office_references(_without_office_work(text, language), customer)
    own = _own_values(customer)
    hidden = 0
    out, cursor = [], 0
    withheld = say(language, _("[withheld]"))
    for start, end, _category in privacy.find(text):
        value = text[start:end]
        if _key(value) in own:
            continue
        out.append(text[cursor:start])
        out.append(withheld)
        cursor = end
        hidden += 1
    out.append(text[cursor:])
    shown = "".join(out)
    for name in _other_names(shown, customer):  # "Roberto Bianchi" for "la factura de Bianchi"
        shown, count = re.subn(re.escape(name), withheld, shown, flags=re.IGNORECASE)
        hidden += count
    return shown, linked, hidden


def _without_office_work(text: str, language: str) -> str:
    """A step that needed a tool customers may not use (issuing an invoice, editing a record)
    says so in the office's words: the customer reads, instead, that the office does that."""
    paragraphs = text.split("\n\n")
    kept = [p for p in paragraphs if NOT_FOR_CUSTOMERS not in p]
    if len(kept) == len(paragraphs):
        return text
    kept.append(_office_work_line(language))
    return "\n\n".join(kept)


def _office_work_line(language: str) -> str:
    return say(language, _("Someone at the office handles that. Would you like me to pass you to "
                           "a person from the office?"))  # fmt: skip


def offers_a_person(text: str, language: str) -> bool:
    """The reply (as written here, before the customer's register) offers them a person."""
    return voice.offer_a_person(language) in text or _office_work_line(language) in text


def sending_documents(reply: str, language: str) -> str:
    """The reply when the documents asked for are sent: the office-work notice gives way to
    "here it is"."""
    office = {_without_office_work(NOT_FOR_CUSTOMERS, language), voice.offer_a_person(language)}
    here = say(language, _("Here is the PDF."))
    kept = [p for p in reply.split("\n\n") if p.strip() and p not in office]
    return "\n\n".join([*kept, here]) if kept else here


def _other_names(text: str, customer: Customer | None) -> list[str]:
    """Names of the organisation's other customers that the text spells out, longest first."""
    if customer is None or not text:
        return []
    folded = fold(text)
    names = (
        Customer.objects.filter(organisation_id=customer.organisation_id)
        .exclude(pk=customer.pk)
        .values_list("name", flat=True)
    )
    found = {name for name in names if len(name) > 3 and fold(name) in folded}
    return sorted((n for n in found if fold(n) != fold(customer.name)), key=len, reverse=True)


def _key(value: str) -> str:
    digits = re.sub(r"\D", "", value)
    return digits[-8:] if len(digits) >= 7 else fold(" ".join(value.split()))


def _own_values(customer: Customer | None) -> set[str]:
    if customer is None:
        return set()
    values = {customer.phone, customer.phone_alt, customer.email, customer.cuit}
    for address in customer.addresses.all():
        values.add(address.street)
        values.add(str(address))
        values.update(str(address).split(","))
    return {_key(value) for value in values if value and value.strip()}


def own_document(customer: Customer, document: Document) -> Invoice | Quote | None:
    """The customer's own invoice or quote (None: not theirs, or not there)."""
    model: type[Invoice] | type[Quote] = Invoice if document.kind == "invoice" else Quote
    return scoped(model, customer.organisation).filter(pk=document.id, customer=customer).first()


def latest_document(customer: Customer, kind: str) -> Document | None:
    """The customer's latest invoice (or quote) when they asked for one and none was named."""
    model: type[Invoice] | type[Quote] = Invoice if kind == "invoice" else Quote
    latest = (
        scoped(model, customer.organisation)
        .filter(customer=customer)
        .order_by("-pk")
        .values_list("pk", flat=True)
        .first()
    )
    return Document(kind, latest) if latest is not None else None


def document_caption(document: Invoice | Quote, language: str) -> str:
    if isinstance(document, Invoice):
        label = f"{document.letter} {document.number}"
        return say(language, _("Invoice %(label)s (PDF)"), label=label)
    return say(language, _("Quote %(number)s (PDF)"), number=document.number)


# --- the conversation and the records ------------------------------------------------------


def link_by_phone(conversation: Conversation) -> bool:
    """Link the WhatsApp conversation to the customer with the sender's number; whether it is
    linked now."""
    customer = match_customer(conversation.organisation_id, conversation.contact)
    if customer is None:
        return False
    link(conversation, customer)
    return True


def link(conversation: Conversation, customer: Customer) -> None:
    Conversation.objects.filter(pk=conversation.pk).update(customer=customer)
    conversation.customer = customer


def pin_subject(conversation: Conversation) -> None:
    """The customer is always the one under discussion in their own conversation (so "quiero un
    service para el jueves" is theirs without naming them)."""
    customer = conversation.customer
    if customer is None:
        return
    state = dict(conversation.state or {})
    if state.get("customer_id") == customer.pk and state.get("customer_label") == customer.name:
        return
    state.update(customer_id=customer.pk, customer_label=customer.name)
    conversation_state_update(conversation=conversation, state=state)


def is_request(text: str) -> bool:
    """More than a greeting: worth answering once the customer is registered."""
    words = [w for w in fold(text).replace(",", " ").split() if w.strip("!.¡¿?")]
    greetings = {"hola", "buenas", "buen", "dia", "dias", "tardes", "noches", "hi", "hello",
                 "hey", "good", "morning", "afternoon", "que", "tal"}  # fmt: skip
    return any(w.strip("!.¡¿?") not in greetings for w in words)


def register(
    run: TurnRun, conversation: Conversation, fields: dict[str, str], language: str
) -> Customer | None:
    """Create the customer through the customer agent's `customer_create` tool (its whitelist,
    its approval rules, a ToolCall row) with the sender's number; linked to the conversation.
    None when it could not be created (or waits for a manager)."""
    agent = run.agents.get(CUSTOMER_AGENT)
    if agent is None or "customer_create" not in (agent.tools or []):
        logger.warning("registration: no enabled customer agent with customer_create")
        return None
    phones = sorted(wa_variants(conversation.contact))
    arguments: dict[str, Any] = {
        "name": fields["name"], "confirmed_new": True,
        "notes": "Registrado por WhatsApp" if language != "en" else "Registered on WhatsApp",
    }  # fmt: skip
    if phones:
        arguments["phone"] = next((p for p in phones if p.startswith("+549")), phones[0])
    if fields.get("street"):
        arguments["street"] = fields["street"]
    if fields.get("city"):
        arguments["city"] = fields["city"]
    step = Step_(index=0, intent="register_customer", agent=agent.name, confidence=1.0,
                 text=run.ctx.text, entities=Entities())  # fmt: skip
    result = Runner(run.ctx, Chain(language), agent, step).call("customer_create", **arguments)
    created = CustomerCreated.of(result)  # None: refused, failed or held
    if created is None:
        logger.warning("registration: customer_create did not create (%s)", result.error)
        return None
    customer = Customer.objects.filter(
        pk=created.customer.id, organisation_id=conversation.organisation_id
    ).first()
    if customer is not None:
        link(conversation, customer)
    return customer


def documents_add(
    conversation: Conversation, documents: list[Document], language: str
) -> Message | None:
    """One assistant message per document (the customer's own only), each with an outgoing row
    that sends the PDF as a WhatsApp document; the last one stored."""
    customer = conversation.customer
    last = None
    for document in documents:
        record = own_document(customer, document) if customer is not None else None
        if record is None:
            continue
        last = message_add(
            conversation=conversation, role=Message.Role.ASSISTANT,
            text=document_caption(record, language), language=language,
            trace={"document": {"kind": document.kind, "id": record.pk, "language": language}},
        )  # fmt: skip
    return last
