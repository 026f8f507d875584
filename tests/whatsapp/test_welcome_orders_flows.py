"""A customer opening the chat from a click-to-chat link (`request_welcome`), an order from the
catalog and a flow's answer (`interactive` `nfm_reply`), issue 27 — each posted from the
real-shaped payloads of tests/whatsapp/payloads/ to the real webhook with the X-Hub-Signature-256
Meta computes; a forged signature and another organisation's number store nothing, and the other
organisation sees nothing of this one's customers."""

from __future__ import annotations

import datetime
import json
import time
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from agents.models import Agent
from business.models import CustomerProfile, Job, Quote
from business.profiles import profile_field
from copilot import runner
from copilot.models import Conversation, Message, Turn
from testing.fake_graph import FakeGraph
from tests import factories
from tests.conftest import Cast
from tests.whatsapp.conftest import CUSTOMER, NUMBER, OTHER_NUMBER, OTHER_SECRET, SECRET
from tests.whatsapp.test_customers import _customer
from tests.whatsapp.test_whatsapp import _delivery, _post, _text
from whatsapp import replies, welcome
from whatsapp.models import OutgoingMessage, WhatsAppAccount

pytestmark = [pytest.mark.usefixtures("registry"), pytest.mark.django_db(transaction=True)]

PAYLOADS = Path(__file__).parent / "payloads"
NEWCOMER = "5491177778888"  # a number no organisation has heard from


def _payload(shape: str, *, sender: str = CUSTOMER, message_id: str = "",
             number: str = NUMBER, ago: int = 5) -> bytes:  # fmt: skip
    """The fixture as Meta would send it now (its timestamp `ago` seconds back), from `sender`
    to the number `number`, under another message id when one is given."""
    data = json.loads((PAYLOADS / f"{shape}.json").read_text())
    value = data["entry"][0]["changes"][0]["value"]
    value["metadata"]["phone_number_id"] = number
    value["contacts"][0]["wa_id"] = sender
    for message in value["messages"]:
        message.update(**{"from": sender, "timestamp": str(int(time.time()) - ago)})
        message["id"] = message_id or message["id"]
    return json.dumps(data, ensure_ascii=False).encode()


def _stored(org: Any) -> tuple[int, int, int, int]:
    """What an organisation holds of WhatsApp: conversations, messages, outgoing rows, turns."""
    return (
        Conversation.objects.filter(organisation=org).count(),
        Message.objects.filter(organisation=org).count(),
        OutgoingMessage.objects.filter(organisation=org).count(),
        Turn.objects.filter(conversation__organisation=org).count(),
    )


def _texts_sent(graph: FakeGraph) -> list[str]:
    return [r.body["text"]["body"] for r in graph.requests if r.body.get("type") == "text"]


# --- request_welcome ----------------------------------------------------------------------------


def test_a_customer_opening_the_chat_is_welcomed_once_through_the_outbox(
    cast: Cast, accounts: Any, graph: FakeGraph, dispatched: list[Any],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    capture = django_capture_on_commit_callbacks
    outsider_before = _stored(cast.other_org)
    with capture(execute=True):
        assert _post(_payload("request_welcome", sender=NEWCOMER)).status_code == 200

    conversation = Conversation.objects.get(organisation=cast.org, contact=NEWCOMER)
    note = conversation.messages.get(role=Message.Role.SYSTEM)
    assert note.trace["whatsapp_opened"] and note.trace["whatsapp"]["type"] == "request_welcome"
    answer = conversation.messages.get(role=Message.Role.ASSISTANT)
    expected = welcome.greeting("Clima Sur", "es")
    assert answer.text == expected and "podés" in expected  # es-AR voseo by default
    assert answer.trace["whatsapp_welcome"] == note.client_id
    row = OutgoingMessage.objects.get(message=answer)
    # The request opened the 24-hour window: free text, not a template.
    assert (row.status, row.as_template, row.to) == (OutgoingMessage.Status.SENT, False, NEWCOMER)
    assert _texts_sent(graph) == [expected]
    assert not conversation.messages.filter(role=Message.Role.USER).exists()
    assert not Turn.objects.exists() and dispatched == []

    # A redelivery is nothing new; another request (another link) is a note, not a second welcome.
    held = _stored(cast.org)
    with capture(execute=True):
        assert _post(_payload("request_welcome", sender=NEWCOMER)).status_code == 200
    assert _stored(cast.org) == held
    with capture(execute=True):
        again = _payload("request_welcome", sender=NEWCOMER, message_id="wamid.welcome-2")
        assert _post(again).status_code == 200
    assert conversation.messages.filter(role=Message.Role.SYSTEM).count() == 2
    assert conversation.messages.filter(role=Message.Role.ASSISTANT).count() == 1
    assert _texts_sent(graph) == [expected]
    assert _stored(cast.other_org) == outsider_before  # the other organisation saw nothing


def test_an_english_speaking_organisation_welcomes_in_english(
    cast: Cast, accounts: Any, graph: FakeGraph, django_capture_on_commit_callbacks: Any
) -> None:
    """Before the customer has written a word, the welcome is in the organisation's language."""
    cast.org.language = "en"
    cast.org.save(update_fields=["language"])
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(_payload("request_welcome", sender=NEWCOMER)).status_code == 200
    answer = Message.objects.get(organisation=cast.org, role=Message.Role.ASSISTANT)
    assert answer.language == "en" and answer.text == welcome.greeting("Clima Sur", "en")
    assert answer.text != welcome.greeting("Clima Sur", "es")
    assert _texts_sent(graph) == [answer.text]


def test_the_organisations_own_welcome_goes_in_the_customers_register(
    cast: Cast, accounts: Any, graph: FakeGraph, django_capture_on_commit_callbacks: Any
) -> None:
    """The account's welcome text replaces the channel's; a customer on file who is addressed
    formally (P4) gets it in "usted"."""
    account = WhatsAppAccount.objects.get(organisation=cast.org)
    account.welcome = "¡Hola! Somos Clima Sur. Decime qué necesitás y te ayudo enseguida."
    account.save()
    marta = _customer(cast)
    CustomerProfile.objects.create(organisation=cast.org, customer=marta, fields={
        "register": profile_field("usted", ["message:1"], timezone.now())
    })  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(_payload("request_welcome")).status_code == 200
    answer = Message.objects.get(organisation=cast.org, role=Message.Role.ASSISTANT)
    assert answer.conversation.customer_id == marta.pk
    assert answer.text == "¡Hola! Somos Clima Sur. Dígame qué necesita y le ayudo enseguida."
    assert _texts_sent(graph) == [answer.text]


def test_the_welcome_opens_a_closed_window(
    cast: Cast, accounts: Any, graph: FakeGraph, dispatched: list[Any],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    """She last wrote two days ago (the window closed, no template to fall back on): opening
    the chat from a link opens it again, so the welcome goes as text."""
    stale = _text("wamid.old", "hola")
    stale["timestamp"] = str(int((timezone.now() - datetime.timedelta(days=2)).timestamp()))
    assert _post(_delivery(stale)).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(_payload("request_welcome")).status_code == 200
    answer = Message.objects.get(organisation=cast.org, trace__has_key="whatsapp_welcome")
    row = OutgoingMessage.objects.get(message=answer)
    assert (row.status, row.as_template) == (OutgoingMessage.Status.SENT, False), row.last_error
    assert _texts_sent(graph) == [answer.text]


def test_no_welcome_while_a_person_handles_the_conversation(
    cast: Cast, accounts: Any, graph: FakeGraph, dispatched: list[Any],
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    assert _post(_delivery(_text("wamid.first", "hola"))).status_code == 200
    Conversation.objects.filter(organisation=cast.org).update(mode=Conversation.Mode.HUMAN)
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(_payload("request_welcome")).status_code == 200
    conversation = Conversation.objects.get(organisation=cast.org, contact=CUSTOMER)
    assert conversation.messages.get(role=Message.Role.SYSTEM).trace["whatsapp_opened"]
    assert not conversation.messages.filter(role=Message.Role.ASSISTANT).exists()
    assert _texts_sent(graph) == []


def test_another_organisations_welcome_does_not_count_here(
    cast: Cast, accounts: Any, graph: FakeGraph, django_capture_on_commit_callbacks: Any
) -> None:
    """The same person opens both organisations' chats: each welcomes them once, and neither
    sees the other's conversation."""
    with django_capture_on_commit_callbacks(execute=True):
        theirs = _payload("request_welcome", number=OTHER_NUMBER, message_id="wamid.frio-1")
        assert _post(theirs, secret=OTHER_SECRET).status_code == 200
    outsider = _stored(cast.other_org)
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(_payload("request_welcome")).status_code == 200
    ours = Conversation.objects.get(organisation=cast.org, contact=CUSTOMER)
    assert ours.messages.filter(trace__has_key="whatsapp_welcome").count() == 1
    assert ours.messages.get(role=Message.Role.ASSISTANT).text.startswith(
        "¡Hola! Somos Clima Sur."
    )  # fmt: skip
    assert _stored(cast.other_org) == outsider


# --- signatures and numbers ---------------------------------------------------------------------


@pytest.mark.parametrize("shape", ["request_welcome", "order", "interactive_flow_reply_fields"])
def test_a_forged_signature_or_another_organisations_number_stores_nothing(
    cast: Cast, accounts: Any, graph: FakeGraph, dispatched: list[Any], shape: str,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    before = (_stored(cast.org), _stored(cast.other_org))
    body = _payload(shape)
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(body, signature="sha256=" + "0" * 64).status_code == 403
        assert _post(body, secret=OTHER_SECRET).status_code == 403  # the other org's secret
        assert _post(body, secret=None).status_code == 403
        # The other organisation's number, signed with this one's secret.
        assert _post(_payload(shape, number=OTHER_NUMBER), secret=SECRET).status_code == 403
    assert (_stored(cast.org), _stored(cast.other_org)) == before
    assert graph.requests == [] and dispatched == []


# --- orders -------------------------------------------------------------------------------------


def test_an_order_is_her_message_for_a_turn_with_the_price_lists_names(
    cast: Cast, accounts: Any, graph: FakeGraph, dispatched: list[Any],
    registry: dict[str, Agent], django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    """Each product by the name this organisation's price list gives its code (the other
    organisation's item with the same code is not read); the cart kept raw; the turn answers
    with the price (the general agent reads the price list, as the shipped defaults let it)."""
    general = registry["general"]
    general.tools = [*general.tools, "price_list"]
    general.save(update_fields=["tools"])
    _customer(cast)
    factories.make_price_item(cast.org, "Carga de gas R410A", "45000", code="carga-gas-3000")
    factories.make_price_item(cast.other_org, "Recarga ajena", "1", code="limpieza-split")
    outsider = _stored(cast.other_org)

    with django_capture_on_commit_callbacks(execute=True):
        assert _post(_payload("order_two_products")).status_code == 200

    asked = Message.objects.get(organisation=cast.org, role=Message.Role.USER)
    assert asked.text == (
        "¿Cuánto sale este pedido del catálogo? 2 × limpieza-split; 1 × Carga de gas R410A"
    )  # fmt: skip
    assert asked.trace["whatsapp"]["order"] == {
        "catalog_id": "881122334455667", "text": "",
        "product_items": [
            {"product_retailer_id": "limpieza-split", "quantity": "2", "item_price": "38000.5",
             "currency": "ARS"},
            {"product_retailer_id": "carga-gas-3000", "quantity": "1", "item_price": "45000",
             "currency": "ARS"},
        ],
    }  # fmt: skip
    # Stored through the turn's path: a turn queued, nothing written to records by the webhook.
    assert dispatched == [(cast.org.pk, asked.conversation_id)]
    assert Turn.objects.get(message=asked).status == Turn.Status.QUEUED
    assert not Quote.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        runner.drain(cast.org.pk, asked.conversation_id)
    answer = Message.objects.get(organisation=cast.org, role=Message.Role.ASSISTANT)
    assert Turn.objects.get(message=asked).status == Turn.Status.DONE
    assert "Carga de gas R410A" in answer.text and "45.000" in answer.text, answer.text
    assert "Recarga ajena" not in answer.text
    assert OutgoingMessage.objects.get(message=answer).status == OutgoingMessage.Status.SENT
    assert _stored(cast.other_org) == outsider


def test_an_order_with_no_product_is_one_the_channel_cannot_read(
    cast: Cast, accounts: Any, graph: FakeGraph, dispatched: list[Any]
) -> None:
    data = json.loads(_payload("order"))
    data["entry"][0]["changes"][0]["value"]["messages"][0]["order"]["product_items"] = []
    assert _post(json.dumps(data).encode()).status_code == 200
    answer = Message.objects.get(organisation=cast.org, role=Message.Role.ASSISTANT)
    assert answer.text == replies.cannot_read("es") and dispatched == []


# --- flow replies -------------------------------------------------------------------------------


def test_a_flow_reply_is_her_answered_fields_with_the_response_kept(
    cast: Cast, accounts: Any, graph: FakeGraph, dispatched: list[Any]
) -> None:
    _customer(cast)
    assert _post(_payload("interactive_flow_reply_fields")).status_code == 200
    asked = Message.objects.get(organisation=cast.org, role=Message.Role.USER)
    assert asked.text.splitlines() == [
        "fecha visita: 2026-12-03", "franja: tarde", "equipos: split living, split dormitorio",
        "comentario: el portero abre hasta las 18", "acepta terminos: sí",
    ]  # fmt: skip
    response = json.loads(asked.trace["whatsapp"]["flow_response"])
    assert response["flow_token"] == "visita-43" and response["acepta_terminos"] is True
    assert "visita-43" not in asked.text  # the token is ours, not something she wrote
    assert dispatched == [(cast.org.pk, asked.conversation_id)]
    assert not Message.objects.filter(organisation=cast.other_org).exists()


def test_a_flow_answer_for_a_visit_books_it_on_its_day_in_its_part_of_the_day(
    cast: Cast, accounts: Any, graph: FakeGraph, dispatched: list[Any],
    registry: dict[str, Agent], clock: datetime.datetime, django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    """The form's answers read as she would have written them: the visit on its date, in the
    afternoon its "franja" asks for, told to her without the office's words (no "visita de
    visita técnica": the visit a job is named for is said once)."""
    scheduling = registry["scheduling"]
    scheduling.tools = [*scheduling.tools, "slots_find"]  # as the shipped defaults have it
    scheduling.save(update_fields=["tools"])
    marta = _customer(cast)
    factories.make_technician(cast.org, "Lucía Fernández")
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(_payload("interactive_flow_reply_fields")).status_code == 200
    asked = Message.objects.get(organisation=cast.org, role=Message.Role.USER)
    with django_capture_on_commit_callbacks(execute=True):
        runner.drain(cast.org.pk, asked.conversation_id)
    [job] = Job.objects.filter(organisation=cast.org)
    start = timezone.localtime(job.scheduled_start)
    assert job.customer == marta and start.date() == datetime.date(2026, 12, 3)
    assert 12 <= start.hour < 19  # the afternoon
    answer = Message.objects.get(organisation=cast.org, role=Message.Role.ASSISTANT)
    assert answer.text.startswith("Listo: tu visita técnica quedó agendada para el jueves 03/12")
    assert "Va Lucía." in answer.text


@pytest.mark.parametrize("response_json", ["[1, 2]", "not json", '{"flow_token": "visita-43"}'])
def test_a_flow_reply_without_answered_fields_is_one_the_channel_cannot_read(
    cast: Cast, accounts: Any, graph: FakeGraph, dispatched: list[Any], response_json: str
) -> None:
    data = json.loads(_payload("interactive_flow_reply"))
    message = data["entry"][0]["changes"][0]["value"]["messages"][0]
    message["interactive"]["nfm_reply"]["response_json"] = response_json
    assert _post(json.dumps(data).encode()).status_code == 200
    answer = Message.objects.get(organisation=cast.org, role=Message.Role.ASSISTANT)
    assert answer.text == replies.cannot_read("es") and dispatched == []
