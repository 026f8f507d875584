"""Choices on WhatsApp (issue 27.2): options a reply lists go out as reply buttons or a list, and
a tap comes back as that option's whole line; typed answers keep working."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from copilot.models import Conversation, Message, Turn
from copilot.services import message_add
from testing.fake_graph import FakeGraph
from tests.conftest import Cast
from tests.whatsapp.conftest import CUSTOMER
from tests.whatsapp.test_whatsapp import _delivery, _post, _text
from whatsapp import outbox
from whatsapp.choices import interactive_body
from whatsapp.models import OutgoingMessage

pytestmark = [
    pytest.mark.usefixtures("registry", "accounts"),
    pytest.mark.django_db(transaction=True),
]

SLOTS = (
    "¿Cuál de estos turnos te queda bien?\n"
    "- jueves 03/12 10:00 con Lucas Fernández\n"
    "- jueves 03/12 15:00 con Diego Sosa\n"
    "- viernes 04/12 11:00 con Lucas Fernández\n"
    "- viernes 04/12 16:00 con Diego Sosa"
)


def test_two_short_options_are_reply_buttons_and_the_question_their_body() -> None:
    body = interactive_body(CUSTOMER, "¿Es el mismo cliente?\n- Sí, es él\n- No, es otro", "es")

    assert body is not None and body["type"] == "interactive" and body["to"] == CUSTOMER
    interactive = body["interactive"]
    assert interactive["type"] == "button"
    assert interactive["body"]["text"] == "¿Es el mismo cliente?"
    assert [b["reply"] for b in interactive["action"]["buttons"]] == [
        {"id": "opt:1", "title": "Sí, es él"},
        {"id": "opt:2", "title": "No, es otro"},
    ]


def test_longer_options_are_a_list_within_whatsapps_limits() -> None:
    body = interactive_body(CUSTOMER, SLOTS, "es")

    assert body is not None
    interactive = body["interactive"]
    assert interactive["type"] == "list"
    assert interactive["body"]["text"] == "¿Cuál de estos turnos te queda bien?"
    assert interactive["action"]["button"] == "Ver opciones"
    rows = interactive["action"]["sections"][0]["rows"]
    assert [row["id"] for row in rows] == ["opt:1", "opt:2", "opt:3", "opt:4"]
    assert rows[0] == {
        "id": "opt:1",
        "title": "jueves 03/12 10:00 con",
        "description": "Lucas Fernández",
    }
    for row in rows:
        assert 0 < len(row["title"]) <= 24 and len(row.get("description", "")) <= 72


@pytest.mark.parametrize(
    "text",
    [
        "Listo, te agendé para el jueves a las 10.",  # no options
        "¿Cuál?\n- una sola opción",  # one option is no choice
        "¿Cuál?\n" + "\n".join(f"- opción {n}" for n in range(1, 12)),  # 11: over the list's 10
        "¿Cuál?\n- " + "palabra " * 20 + "\n- corta",  # a line too long for a row
        "¿Cuál?\n- la misma\n- la misma",  # two rows alike could not be told apart
        "x" * 1100 + "\n- a\n- b",  # a body over 1,024 characters
    ],
)
def test_replies_that_offer_no_choice_that_fits_stay_text(text: str) -> None:
    assert interactive_body(CUSTOMER, text, "es") is None


def test_a_list_of_facts_is_no_question_and_stays_text() -> None:
    visits = "Your upcoming visits:\n- Thursday 10:00, split service\n- Friday 15:00, boiler"
    assert interactive_body(CUSTOMER, visits, "en") is None


def test_the_list_button_speaks_the_customers_language() -> None:
    text = SLOTS.replace("¿Cuál de estos turnos te queda bien?", "Which slot suits you?")
    body = interactive_body(CUSTOMER, text, "en")
    assert body is not None and body["interactive"]["action"]["button"] == "See options"


def _conversation_with_choices(cast: Cast) -> Conversation:
    assert _post(_delivery(_text("wamid.1", "quiero un turno para el service"))).status_code == 200
    conversation = Conversation.objects.get(organisation=cast.org, contact=CUSTOMER)
    Turn.objects.filter(conversation=conversation).update(status=Turn.Status.DONE)
    message_add(conversation=conversation, role=Message.Role.ASSISTANT, text=SLOTS, language="es")
    return conversation


def _tap(message_id: str, kind: str, picked: dict[str, str]) -> dict[str, Any]:
    stamp = str(int(timezone.now().timestamp()))
    return {"from": CUSTOMER, "id": message_id, "timestamp": stamp, "type": "interactive",
            "interactive": {"type": kind, kind: picked}}  # fmt: skip


def test_a_reply_listing_options_is_sent_as_a_list(
    cast: Cast, graph: FakeGraph, dispatched: list[Any]
) -> None:
    conversation = _conversation_with_choices(cast)
    row = OutgoingMessage.objects.get(conversation=conversation)

    outbox.deliver(row.pk)

    [request] = graph.requests
    assert request.body["type"] == "interactive"
    assert request.body["interactive"]["type"] == "list"
    row.refresh_from_db()
    assert row.status == OutgoingMessage.Status.SENT and row.text == SLOTS  # stored as written


def test_a_tapped_row_is_read_as_that_options_whole_line(cast: Cast, dispatched: list[Any]) -> None:
    conversation = _conversation_with_choices(cast)
    picked = {"id": "opt:3", "title": "viernes 04/12 11:00 con", "description": "Lucas Fernández"}

    assert _post(_delivery(_tap("wamid.2", "list_reply", picked))).status_code == 200

    asked = Message.objects.get(conversation=conversation, client_id="wamid.2")
    assert asked.role == Message.Role.USER
    assert asked.text == "viernes 04/12 11:00 con Lucas Fernández"
    assert Turn.objects.filter(message=asked, status=Turn.Status.QUEUED).exists()  # answered
    assert dispatched[-1] == (cast.org.pk, conversation.pk)


def test_a_tapped_button_without_our_options_reads_as_its_title(
    cast: Cast, dispatched: list[Any]
) -> None:
    _conversation_with_choices(cast)
    picked = {"id": "opt:9", "title": "Sí, confirmo"}  # no ninth option: the title it showed

    assert _post(_delivery(_tap("wamid.3", "button_reply", picked))).status_code == 200

    asked = Message.objects.get(organisation=cast.org, client_id="wamid.3")
    assert asked.text == "Sí, confirmo"


def test_a_templates_quick_reply_is_read_as_its_text(cast: Cast, dispatched: list[Any]) -> None:
    stamp = str(int(timezone.now().timestamp()))
    quick = {"from": CUSTOMER, "id": "wamid.4", "timestamp": stamp, "type": "button",
             "button": {"payload": "confirm-visit", "text": "Confirmo la visita"}}  # fmt: skip

    assert _post(_delivery(quick)).status_code == 200

    asked = Message.objects.get(organisation=cast.org, client_id="wamid.4")
    assert asked.text == "Confirmo la visita"
    assert Turn.objects.filter(message=asked).exists()


def test_a_malformed_tap_is_refused_and_stores_nothing(cast: Cast, dispatched: list[Any]) -> None:
    picked = {"id": ["opt:1"], "title": "jueves"}  # an id that is not text

    assert _post(_delivery(_tap("wamid.5", "list_reply", picked))).status_code == 200

    assert not Message.objects.filter(organisation=cast.org, client_id="wamid.5").exists()


def test_a_yes_or_no_question_gets_si_and_no_buttons_only_when_one_is_pending() -> None:
    question = "¿Es la misma Marta Gómez de Mitre 123?"
    body = interactive_body(CUSTOMER, question, "es", yes_no=True)

    assert body is not None and body["interactive"]["body"]["text"] == question
    assert [b["reply"] for b in body["interactive"]["action"]["buttons"]] == [
        {"id": "yes", "title": "Sí"},
        {"id": "no", "title": "No"},
    ]
    english = interactive_body(CUSTOMER, "Shall I book it?", "en", yes_no=True)
    assert english is not None
    assert english["interactive"]["action"]["buttons"][0]["reply"]["title"] == "Yes"
    assert interactive_body(CUSTOMER, question, "es") is None  # no yes-or-no question pending
    assert interactive_body(CUSTOMER, "Listo, agendado.", "es", yes_no=True) is None


def test_a_pending_confirmation_goes_out_as_buttons_and_a_tap_answers_it(
    cast: Cast, graph: FakeGraph, dispatched: list[Any]
) -> None:
    assert _post(_delivery(_text("wamid.1", "quiero cancelar la visita"))).status_code == 200
    conversation = Conversation.objects.get(organisation=cast.org, contact=CUSTOMER)
    Turn.objects.filter(conversation=conversation).update(status=Turn.Status.DONE)
    asked_at = timezone.now().isoformat()
    conversation.state = {"pending_clarification": {
        "intent": "cancel_job", "agent": "scheduling", "text": "quiero cancelar la visita",
        "question": "¿Confirmás que la cancelo?", "slot": "confirm", "count": 1,
        "asked_at": asked_at,
    }}  # fmt: skip
    conversation.save()
    message_add(
        conversation=conversation, role=Message.Role.ASSISTANT,
        text="¿Confirmás que cancelo la visita del jueves?", language="es",
    )  # fmt: skip
    row = OutgoingMessage.objects.get(conversation=conversation)

    outbox.deliver(row.pk)

    [request] = graph.requests
    assert request.body["interactive"]["type"] == "button"
    tap = _tap("wamid.2", "button_reply", {"id": "yes", "title": "Sí"})
    assert _post(_delivery(tap)).status_code == 200
    assert Message.objects.get(conversation=conversation, client_id="wamid.2").text == "Sí"
