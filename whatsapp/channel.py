"""What WhatsApp adds to a turn (copilot/channels.py): the writer is a customer.

- An unknown number registers first, one step a turn (whatsapp/customers.py); once registered,
  the conversation is pinned to that customer's records and their first request is answered.
- A request for a person, however it is phrased, is read by the organisation's router (the
  registry's `escalate` intent and its examples): the conversation goes to human mode, the
  customer is told in one line and the panels are alerted; no step runs, no ticket is opened
  (the conversation itself is what a person picks up). When the copilot offered a person ("¿querés
  que te pase con una persona?", the reply's trace `person_offered`, sent with "Sí" / "No"
  buttons), a bare "sí" / "dale" / "yes" or the "Sí" button hands over the same way; a bare "no"
  gets one line.
- A member who took the conversation over answers it: the copilot does not (whatsapp/humans.py).
- The customer reads the reply written to them (whatsapp/voice.py): what each step did in
  their words, never the office's phrasing or a failure; other people's data hidden, the PDFs
  they asked for sent as documents after it; every assistant message goes out through the
  outbox (whatsapp/outbox.py).
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from agents.context import TurnContext
from business.profiles import customer_profile_fields
from copilot.answering import Produced, TurnResult, answer_turn, fail_turn, open_run
from copilot.channels import Channel, Emit
from copilot.kinds import answer_with_graph
from copilot.models import Conversation, Message, Turn
from copilot.orchestration.replies import in_customer_style
from copilot.orchestration.state import TurnRun, TurnState
from copilot.router_cache import router_for, vocabulary_for
from copilot.services import conversation_state_update
from nlu import Context, answers
from whatsapp import customers, humans, routing, voice
from whatsapp.outbox import outbox_add

logger = logging.getLogger(__name__)

# The registry's intent for "a person, please" (agents/escalation/agent.py `escalate`): on
# WhatsApp it is the hand-over itself.
ASKS_FOR_A_PERSON = "escalate"
# How long a reply's offer of a person stands: a "sí" the next day answers something else.
OFFER_LASTS = datetime.timedelta(hours=1)


class WhatsApp(Channel):
    name = Conversation.Channel.WHATSAPP
    urls = "whatsapp.urls"
    takes_decisions = False  # a customer never approves the office's held actions

    def __init__(self) -> None:
        self.websocket_urlpatterns = routing.websocket_urlpatterns

    def person_answers(self, conversation: Conversation) -> bool:
        # Read again: a member may have taken the conversation over since the turn was queued.
        mode = Conversation.objects.filter(pk=conversation.pk).values_list("mode", flat=True)
        return mode.first() == Conversation.Mode.HUMAN

    def before_graph(self, turn: Turn, emit: Emit) -> TurnResult | None:
        conversation = turn.conversation
        answer = offer_answer(turn)
        if answer == "no":
            return _offer_declined(turn, emit)
        if answer == "yes" or asks_for_a_person(turn):
            return _hand_over(turn, emit)
        if conversation.customer_id is None and not customers.link_by_phone(conversation):
            return _registration_step(turn, emit)
        customers.pin_subject(conversation)
        return None

    def customer_of(self, conversation: Conversation) -> int | None:
        return conversation.customer_id

    def reply_for_reader(
        self, run: TurnRun, state: TurnState, asked: Message
    ) -> list[customers.Document]:
        """Other people's data hidden, PDF links turned into the documents to send (those the
        customer asked for)."""
        if run.ctx.customer_id is None:
            return []
        conversation = asked.conversation
        customer = conversation.customer
        language = state["reading"].language or asked.language or "es"
        offered = False  # read before the customer's register rewrites the line
        if customer is not None and (mine := voice.customer_reply(state, run.ctx, customer,
                                                                  language)):  # fmt: skip
            offered = customers.offers_a_person(mine, language)
            state["reply"], state["parts"] = styled(conversation, mine, language), []
        reply, linked, hidden = customers.for_customer(state["reply"], customer, language)
        state["reply"] = reply
        _mark_offer(state, offered or customers.offers_a_person(reply, language))
        if state.get("parts"):
            state["parts"] = [
                (agent, customers.for_customer(text, customer, language)[0])
                for agent, text in state["parts"]
            ]
        state.setdefault("trace", {})["customer_privacy"] = {"hidden": hidden}
        wanted = customers.documents_wanted(asked.text)
        if wanted is None or customer is None:
            return []
        chosen = [d for d in linked if d.kind == wanted] or linked
        if not chosen and (latest := customers.latest_document(customer, wanted)) is not None:
            chosen = [latest]
        if chosen:  # what the office would have done instead is not the customer's concern
            state["reply"] = customers.sending_documents(state["reply"], language)
        else:
            state["reply"] = styled(conversation, voice.no_documents(wanted, language), language)
        _mark_offer(state, not chosen)  # none found: a person is offered
        state["parts"] = []
        return chosen

    def reply_stored(self, conversation: Conversation, answer: Message, extra: Any) -> Message:
        if not extra:
            return answer
        return customers.documents_add(conversation, extra, answer.language or "es") or answer

    def message_stored(self, conversation: Conversation, message: Message) -> None:
        outbox_add(message, conversation)  # sent once the storing transaction commits


def asks_for_a_person(turn: Turn) -> bool:
    """The organisation's router reads the message as a request for a person (alone or among
    other requests: a person handles all of it then)."""
    organisation = turn.conversation.organisation
    ctx = TurnContext.build(organisation)
    context = Context(today=ctx.today, now=ctx.local_now, tz=organisation.timezone,
                      vocabulary=vocabulary_for(organisation))  # fmt: skip
    reading = router_for(organisation).understand(turn.message.text, context)
    return any(task.intent == ASKS_FOR_A_PERSON for task in reading.tasks)


def _mark_offer(state: TurnState, offered: bool) -> None:
    """The reply offers the customer a person (or no longer does): kept in its trace, so the
    outbox sends it with "Sí" / "No" buttons and the next message may accept it."""
    trace = state.setdefault("trace", {})
    if offered:
        trace[voice.PERSON_OFFERED] = True
    else:
        trace.pop(voice.PERSON_OFFERED, None)


def offer_answer(turn: Turn) -> str:
    """ "yes" when the customer's message is a bare yes ("sí", "dale", "yes", the "Sí" button)
    to our latest reply's offer of a person, "no" for a bare no, else "" (any other message is
    read as usual, and the offer lapses)."""
    asked = turn.message
    latest = (
        Message.objects.filter(
            conversation_id=turn.conversation_id, role=Message.Role.ASSISTANT, pk__lt=asked.pk
        )
        .order_by("-pk")
        .values_list("trace", "created_at")
        .first()
    )
    if latest is None or not (latest[0] or {}).get(voice.PERSON_OFFERED):
        return ""
    if asked.created_at - latest[1] > OFFER_LASTS:
        return ""
    if answers.agrees(asked.text):
        return "yes"
    return "no" if answers.declines(asked.text) else ""


def _offer_declined(turn: Turn, emit: Emit) -> TurnResult:
    conversation, language = turn.conversation, turn.message.language or "es"

    def produce(run: TurnRun | None) -> Produced:
        return Produced(styled(conversation, voice.offer_declined(language), language),
                        {"person_declined": True})  # fmt: skip

    return answer_turn(turn, emit, produce, language=language, opens_run=False)


def _hand_over(turn: Turn, emit: Emit) -> TurnResult:
    """Human mode, the customer told in one line (in their register), the panels alerted."""
    conversation, asked = turn.conversation, turn.message
    language = asked.language or "es"

    def produce(run: TurnRun | None) -> Produced:
        humans.hand_over(conversation, asked.text)
        return Produced(styled(conversation, humans.handing_over(language), language),
                        {"human_requested": True})  # fmt: skip

    return answer_turn(turn, emit, produce, language=language, opens_run=False)


def styled(conversation: Conversation, text: str, language: str) -> str:
    """A line written here (not by a step) in the customer's register (P4)."""
    if conversation.customer_id is None:
        return text
    profile = customer_profile_fields(conversation.organisation_id, conversation.customer_id)
    return in_customer_style(text, profile, language)


def _registration_step(turn: Turn, emit: Emit) -> TurnResult:
    """An unknown number: one step of the registration. Once complete the customer is created
    through the customer agent's `customer_create` tool and the conversation linked to them;
    their first request, if they made one, is then answered."""
    asked, conversation = turn.message, turn.conversation
    flow = (conversation.state or {}).get(customers.STATE_KEY)
    try:
        if not isinstance(flow, dict):
            language = asked.language or "es"
            step = customers.registration_start(
                asked.text, language, conversation.organisation.name
            )
        else:
            language = str(flow.get("language") or "es")
            step = customers.registration_step(flow, asked.text)
        reply = step.reply
        if step.create:
            customer = customers.register(open_run(turn, emit), conversation, step.create, language)
            if customer is not None:
                pending = str((flow or {}).get("pending") or "")
                opening = customers.registered(customer.name, language)
                if customers.is_request(pending):  # the flow is over: its state goes
                    _state_set(conversation, None)
                    customers.pin_subject(conversation)
                    return answer_with_graph(turn, emit, text=pending, opening=opening)
                reply = f"{opening} {customers.how_can_i_help(language)}"
            else:
                reply = customers.registration_failed(language)
    except Exception as exc:
        logger.exception("registration turn %s failed", turn.pk)
        return fail_turn(turn, emit, exc)

    def produce(run: TurnRun | None) -> Produced:
        _state_set(conversation, step.state)
        return Produced(reply, {"registration": step.state or {}})

    return answer_turn(turn, emit, produce, language=language, opens_run=False)


def _state_set(conversation: Conversation, flow: dict[str, Any] | None) -> None:
    """The registration's step in the conversation's state (none once it is over)."""
    state = {k: v for k, v in (conversation.state or {}).items() if k != customers.STATE_KEY}
    if flow is not None:
        state[customers.STATE_KEY] = flow
    conversation_state_update(conversation=conversation, state=state)
