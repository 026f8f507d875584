"""A customer's request for a person on WhatsApp (issue 27.4), in many phrasings in es and en: the
organisation's router reads it as the registry's escalation intent, the conversation goes to human
mode, the customer gets one line, the organisation's panels hear which conversation wants a person,
and no ticket is opened; the copilot stays quiet until a member hands the conversation back — over
the signed webhook, the turn runner and the panel's views."""

from __future__ import annotations

import time
from typing import Any

import pytest

from business.models import Customer, EscalationTicket
from copilot import runner
from copilot.models import Conversation, Message, Turn
from nlu import answers
from testing.fake_graph import FakeGraph
from tests import factories
from tests.conftest import Cast
from tests.whatsapp.test_customers import SENDER, _customer, _member, _turn
from tests.whatsapp.test_whatsapp import _delivery, _post

pytestmark = pytest.mark.django_db(transaction=True)  # the runner reopens its connection

ASKS = [
    ("me pasás con alguien de la oficina?", "es"),
    ("quiero hablar con una persona", "es"),
    ("necesito que me atienda alguien", "es"),
    ("¿hay alguien ahí que me pueda atender?", "es"),
    ("can I talk to a human?", "en"),
    ("put me through to someone", "en"),
]
HANDED = {
    "es": "Te paso con una persona del equipo: en breve te responde por acá.",
    "en": "I'm passing you to a person from the team: they will answer you here shortly.",
}


@pytest.fixture
def marta(cast: Cast) -> Customer:
    return _customer(cast)


@pytest.mark.parametrize(("text", "language"), ASKS)
def test_a_request_for_a_person_in_any_words_hands_the_conversation_over(
    cast: Cast, agents: Any, account: Any, dispatched: list[Any], graph: FakeGraph,
    told: list[Any], marta: Customer, django_capture_on_commit_callbacks: Any,
    text: str, language: str,
) -> None:  # fmt: skip
    theirs = Conversation.objects.create(
        organisation=cast.other_org, channel="whatsapp", contact=SENDER
    )
    reply = _turn(cast, text, django_capture_on_commit_callbacks)
    assert reply == HANDED[language]
    conversation = Conversation.objects.get(organisation=cast.org, contact=SENDER)
    assert conversation.mode == "human" and conversation.taken_by is None
    assert graph.requests[-1].body["text"]["body"] == reply  # the customer got it
    assert not EscalationTicket.objects.exists()  # the conversation is what a person picks up
    alert = {
        "type": "whatsapp.changed",
        "event": "human_requested",
        "mode": "human",
        "conversation_id": conversation.pk,
        "title": "WhatsApp Marta",
        "text": text,
    }
    assert told[-1] == (f"whatsapp.o{cast.org.pk}", alert)  # fmt: skip
    # Another organisation's conversation with the same number is untouched, and hears nothing.
    theirs.refresh_from_db()
    assert theirs.mode == "copilot" and not theirs.messages.exists()
    assert all(group == f"whatsapp.o{cast.org.pk}" for group, _frame in told)


@pytest.mark.parametrize(
    "text", ["cuándo viene el técnico?", "el técnico dejó todo sucio", "hola", "gracias"]
)
def test_other_messages_stay_with_the_copilot(
    cast: Cast, agents: Any, account: Any, dispatched: list[Any], graph: FakeGraph,
    told: list[Any], marta: Customer, django_capture_on_commit_callbacks: Any, text: str,
) -> None:  # fmt: skip
    reply = _turn(cast, text, django_capture_on_commit_callbacks)
    assert reply and reply not in HANDED.values()
    assert Conversation.objects.get(contact=SENDER).mode == "copilot"
    assert "human_requested" not in [frame["event"] for _group, frame in told]


def test_the_person_keeps_the_conversation_until_it_is_handed_back(
    cast: Cast, agents: Any, account: Any, dispatched: list[Any], graph: FakeGraph,
    told: list[Any], marta: Customer, django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    capture = django_capture_on_commit_callbacks
    _turn(cast, "necesito hablar con alguien de la oficina", capture)
    conversation = Conversation.objects.get(contact=SENDER)
    turns = Turn.objects.filter(conversation=conversation).count()
    operator = _member(cast.operator)
    base = f"/whatsapp/conversations/{conversation.pk}"
    with capture(execute=True):
        assert operator.post(f"{base}/take/").status_code == 302
        assert operator.post(f"{base}/reply/", {"text": "Hola Marta, soy Ana."}).status_code == 302
    assert graph.requests[-1].body["text"]["body"] == "Hola Marta, soy Ana."
    # She writes again: stored and shown, no turn, no answer of the copilot's.
    assert _turn(cast, "¿me agendás el service para el lunes?", capture) == ""
    assert Turn.objects.filter(conversation=conversation).count() == turns
    assert told[-1][1]["event"] == "message"
    with capture(execute=True):
        assert operator.post(f"{base}/release/").status_code == 302
    conversation.refresh_from_db()
    assert conversation.mode == "copilot" and conversation.taken_by is None
    assert _turn(cast, "¿cuánto sale la carga de gas?", capture)  # the copilot answers again
    assert Turn.objects.filter(conversation=conversation).count() == turns + 1


def test_a_request_for_a_person_during_the_registration_hands_over_too(
    cast: Cast, agents: Any, account: Any, dispatched: list[Any], graph: FakeGraph,
    told: list[Any], django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    capture = django_capture_on_commit_callbacks
    assert "nombre" in _turn(cast, "hola", capture)
    assert _turn(cast, "prefiero hablar con una persona", capture) == HANDED["es"]
    conversation = Conversation.objects.get(contact=SENDER)
    assert conversation.mode == "human" and not Customer.objects.exists()
    assert not Message.objects.filter(conversation=conversation, text__contains="dirección")


# --- the offer of a person (the copilot could not help) ----------------------------------------


def _offered(cast: Cast, graph: FakeGraph, capture: Any, text: str = "mandame la factura") -> None:
    """She asks for what the copilot cannot give; it offers a person, as a yes-or-no question
    with "Sí" and "No" buttons."""
    reply = _turn(cast, text, capture)
    assert "person" in reply or "persona" in reply
    body = graph.requests[-1].body
    assert body["type"] == "interactive" and body["interactive"]["type"] == "button"
    assert [b["reply"]["id"] for b in body["interactive"]["action"]["buttons"]] == ["yes", "no"]
    assert Conversation.objects.get(contact=SENDER).mode == "copilot"


@pytest.mark.parametrize("answer", ["sí", "Dale", "si, por favor", "ok, pasame", "👍"])
def test_a_bare_yes_to_the_offer_of_a_person_hands_the_conversation_over(
    cast: Cast, agents: Any, account: Any, dispatched: list[Any], graph: FakeGraph,
    told: list[Any], marta: Customer, django_capture_on_commit_callbacks: Any, answer: str,
) -> None:  # fmt: skip
    capture = django_capture_on_commit_callbacks
    _offered(cast, graph, capture)
    assert _turn(cast, answer, capture) == HANDED["es"]
    conversation = Conversation.objects.get(contact=SENDER)
    assert conversation.mode == "human" and told[-1][1]["event"] == "human_requested"
    assert not EscalationTicket.objects.exists()


def test_the_yes_button_accepts_the_offer_in_english_too(
    cast: Cast, agents: Any, account: Any, dispatched: list[Any], graph: FakeGraph,
    told: list[Any], marta: Customer, django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    capture = django_capture_on_commit_callbacks
    _offered(cast, graph, capture, "send me the invoice")
    tap = {
        "from": SENDER,
        "id": "wamid.tap-yes",
        "timestamp": str(int(time.time())),
        "type": "interactive",
        "interactive": {"type": "button_reply", "button_reply": {"id": "yes", "title": "Yes"}},
    }
    with capture(execute=True):
        assert _post(_delivery(tap)).status_code == 200  # fmt: skip
    conversation = Conversation.objects.get(contact=SENDER)
    with capture(execute=True):
        runner.drain(cast.org.pk, conversation.pk)
    conversation.refresh_from_db()
    assert conversation.mode == "human"
    assert graph.requests[-1].body["text"]["body"] == HANDED["en"]


@pytest.mark.parametrize("answer", ["no", "no, gracias"])
def test_a_bare_no_keeps_the_copilot_and_gets_one_line(
    cast: Cast, agents: Any, account: Any, dispatched: list[Any], graph: FakeGraph,
    told: list[Any], marta: Customer, django_capture_on_commit_callbacks: Any, answer: str,
) -> None:  # fmt: skip
    capture = django_capture_on_commit_callbacks
    _offered(cast, graph, capture)
    assert _turn(cast, answer, capture) == "Dale. Si necesitás algo más, escribime por acá."
    assert Conversation.objects.get(contact=SENDER).mode == "copilot"


def test_a_yes_without_an_offer_or_after_another_message_is_no_hand_over(
    cast: Cast, agents: Any, account: Any, dispatched: list[Any], graph: FakeGraph,
    told: list[Any], marta: Customer, django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    capture = django_capture_on_commit_callbacks
    factories.make_price_item(cast.org, "Carga de gas", "45000")
    assert _turn(cast, "sí", capture) != HANDED["es"]  # nothing was offered
    _offered(cast, graph, capture)
    assert "45.000" in _turn(cast, "cuánto sale la carga de gas?", capture)  # the offer lapses
    assert _turn(cast, "dale", capture) != HANDED["es"]
    assert Conversation.objects.get(contact=SENDER).mode == "copilot"


@pytest.mark.parametrize(
    ("text", "agrees", "declines"),
    [
        ("sí", True, False), ("Dale!", True, False), ("si, por favor", True, False),
        ("bueno dale, gracias", True, False), ("yes please", True, False), ("sure", True, False),
        ("👍🏽", True, False), ("no", False, True), ("no, gracias", False, True),
        ("not now", False, True), ("no sé", False, False), ("sí pero el lunes", False, False),
        ("cuánto sale?", False, False), ("", False, False),
    ],
)  # fmt: skip
def test_a_bare_yes_and_a_bare_no(text: str, agrees: bool, declines: bool) -> None:
    assert answers.agrees(text) is agrees and answers.declines(text) is declines
