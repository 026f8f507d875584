"""Webhook events that are not customer messages (issue 27.1): reactions, edits, deletions,
number and identity changes, call-permission replies, and messages the channel cannot read —
posted as Meta signs them to the real webhook, over real rows; each asserts what changed and
that nothing was answered that should not be."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from django.utils import timezone

from copilot import runner
from copilot.models import Conversation, Message, Turn
from copilot.services import message_add
from testing.fake_graph import FakeGraph
from tests.conftest import Cast
from tests.whatsapp.conftest import CUSTOMER, OTHER_NUMBER, OTHER_SECRET
from tests.whatsapp.test_whatsapp import _delivery, _post, _text
from whatsapp.models import OutgoingMessage

pytestmark = [
    pytest.mark.usefixtures("registry", "accounts"),
    pytest.mark.django_db(transaction=True),
]

NEW_NUMBER = "5491166660000"


def _event(message_id: str, kind: str, body: Any, sender: str = CUSTOMER, **extra: Any) -> Any:
    stamp = str(int(timezone.now().timestamp()))
    return {"from": sender, "id": message_id, "timestamp": stamp, "type": kind, kind: body,
            **extra}  # fmt: skip


def _reaction(message_id: str, target: str, emoji: str | None = "❤️") -> Any:
    body = {"message_id": target} | ({"emoji": emoji} if emoji is not None else {})
    return _event(message_id, "reaction", body)


def _conversation(cast: Cast) -> Conversation:
    return Conversation.objects.get(organisation=cast.org, channel="whatsapp")


def _counts(cast: Cast) -> tuple[int, int, int]:
    """Messages, outgoing rows and turns of the organisation: an event adds none of them."""
    org = cast.org
    return (
        Message.objects.filter(organisation=org).count(),
        OutgoingMessage.objects.filter(organisation=org).count(),
        Turn.objects.filter(conversation__organisation=org).count(),
    )


def _asked(cast: Cast, text: str = "el jueves a la tarde", message_id: str = "wamid.1") -> Message:
    assert _post(_delivery(_text(message_id, text))).status_code == 200
    return Message.objects.get(organisation=cast.org, client_id=message_id)


def _sent_reply(cast: Cast, provider_id: str = "wamid.out1") -> Message:
    """One of our replies, as the outbox leaves it once the Graph API took it."""
    conversation = _conversation(cast)
    reply = Message.objects.create(
        organisation=cast.org, conversation=conversation, role="assistant", text="¡Hola!"
    )
    OutgoingMessage.objects.create(
        organisation=cast.org, conversation=conversation, message=reply, to=CUSTOMER,
        text=reply.text, status=OutgoingMessage.Status.SENT, provider_message_id=provider_id,
    )  # fmt: skip
    return reply


# --- reactions --------------------------------------------------------------------------------


def test_a_reaction_is_kept_on_our_reply_and_taken_back_without_an_answer(
    cast: Cast, dispatched: list[Any]
) -> None:
    _asked(cast)
    reply = _sent_reply(cast)
    before = _counts(cast)

    assert _post(_delivery(_reaction("wamid.r1", "wamid.out1"))).status_code == 200
    reply.refresh_from_db()
    assert reply.trace["whatsapp_reaction"]["emoji"] == "❤️"
    assert reply.text == "¡Hola!" and _counts(cast) == before
    assert len(dispatched) == 1  # the text's turn only

    # Meta's shape for a reaction taken back: the same message id, no emoji.
    assert _post(_delivery(_reaction("wamid.r2", "wamid.out1", emoji=None))).status_code == 200
    reply.refresh_from_db()
    assert "whatsapp_reaction" not in reply.trace
    assert _counts(cast) == before and len(dispatched) == 1


def test_a_reaction_to_the_customers_own_message_is_kept_on_it(
    cast: Cast, dispatched: list[Any]
) -> None:
    asked = _asked(cast)
    before = _counts(cast)
    assert _post(_delivery(_reaction("wamid.r1", "wamid.1", "👍"))).status_code == 200
    asked.refresh_from_db()
    assert asked.trace["whatsapp_reaction"]["emoji"] == "👍"
    assert _counts(cast) == before and len(dispatched) == 1


def test_a_reaction_to_an_unknown_message_stores_nothing(cast: Cast, dispatched: list[Any]) -> None:
    _asked(cast)
    before = _counts(cast)
    assert _post(_delivery(_reaction("wamid.r1", "wamid.nobody"))).status_code == 200
    assert _counts(cast) == before
    assert not Message.objects.filter(text__contains="reaction").exists()


# --- edits and deletions ----------------------------------------------------------------------


def test_an_edit_replaces_the_text_and_keeps_the_original_in_the_trace(
    cast: Cast, dispatched: list[Any]
) -> None:
    asked = _asked(cast, "el jueves a la tarde")
    before = _counts(cast)
    edit = {"original_message_id": "wamid.1",
            "message": {"type": "text", "text": {"body": "el jueves a las 15"}}}  # fmt: skip
    for _ in range(2):  # a redelivery is one edit
        assert _post(_delivery(_event("wamid.e1", "edit", edit))).status_code == 200
    asked.refresh_from_db()
    assert asked.text == "el jueves a las 15"
    assert [e["was"] for e in asked.trace["whatsapp_edits"]] == ["el jueves a la tarde"]
    assert _counts(cast) == before and len(dispatched) == 1


def test_a_deleted_message_is_marked_deleted_without_an_answer(
    cast: Cast, dispatched: list[Any]
) -> None:
    asked = _asked(cast)
    before = _counts(cast)
    revoke = {"original_message_id": "wamid.1"}
    assert _post(_delivery(_event("wamid.d1", "revoke", revoke))).status_code == 200
    asked.refresh_from_db()
    assert asked.trace["whatsapp_deleted"]["id"] == "wamid.d1"
    assert _counts(cast) == before and len(dispatched) == 1


def test_an_edit_the_cloud_api_reports_as_unsupported_is_a_note_not_an_answer(
    cast: Cast, dispatched: list[Any]
) -> None:
    # What Meta sends today for an edit on Cloud API: no id of the edited message, no text.
    _asked(cast)
    messages, outgoing, turns = _counts(cast)
    unsupported = _event("wamid.u1", "unsupported", {"type": "edit"}, errors=[
        {"code": 131051, "title": "Message type unknown", "message": "Message type unknown",
         "error_data": {"details": "Message type is currently not supported."}}])  # fmt: skip
    for _ in range(2):
        assert _post(_delivery(unsupported)).status_code == 200
    note = Message.objects.get(organisation=cast.org, client_id="wamid.u1")
    assert note.role == Message.Role.SYSTEM and "editó un mensaje" in note.text
    assert _counts(cast) == (messages + 1, outgoing, turns)


# --- number and identity changes --------------------------------------------------------------


def test_a_number_change_moves_the_conversation_and_its_replies_to_the_new_number(
    cast: Cast, dispatched: list[Any], graph: FakeGraph, django_capture_on_commit_callbacks: Any
) -> None:
    _asked(cast)
    conversation = _conversation(cast)
    waiting = OutgoingMessage.objects.create(
        organisation=cast.org, conversation=conversation, to=CUSTOMER, text="¡Hola!",
        message=Message.objects.create(organisation=cast.org, conversation=conversation,
                                       role="assistant", text="¡Hola!"),
    )  # fmt: skip
    system = {"body": f"User Marta changed from {CUSTOMER} to {NEW_NUMBER}", "wa_id": NEW_NUMBER,
              "type": "user_changed_number"}  # fmt: skip
    messages, outgoing, turns = _counts(cast)
    for _ in range(2):  # a redelivery moves nothing more
        assert _post(_delivery(_event("wamid.s1", "system", system))).status_code == 200

    conversation.refresh_from_db()
    waiting.refresh_from_db()
    assert conversation.contact == NEW_NUMBER and waiting.to == NEW_NUMBER
    note = Message.objects.get(organisation=cast.org, client_id="wamid.s1")
    assert note.role == Message.Role.SYSTEM and NEW_NUMBER in note.text
    assert _counts(cast) == (messages + 1, outgoing, turns) and len(dispatched) == 1

    # The new number writes into the same conversation, and the reply goes there.
    assert _post(_delivery(_text("wamid.2", "hola de nuevo", sender=NEW_NUMBER))).status_code == 200
    assert Conversation.objects.filter(organisation=cast.org).count() == 1
    with django_capture_on_commit_callbacks(execute=True):
        answer = message_add(conversation=conversation, role="assistant", text="¡Hola, Marta!")
    assert OutgoingMessage.objects.get(message=answer).to == NEW_NUMBER


def test_an_identity_change_is_a_note_and_nothing_is_sent(
    cast: Cast, dispatched: list[Any]
) -> None:
    _asked(cast)
    messages, outgoing, turns = _counts(cast)
    system = {"body": "Marta's security code changed", "type": "customer_identity_changed",
              "identity": "abc", "customer": CUSTOMER}  # fmt: skip
    assert _post(_delivery(_event("wamid.s2", "system", system))).status_code == 200
    note = Message.objects.get(organisation=cast.org, client_id="wamid.s2")
    assert note.role == Message.Role.SYSTEM and _conversation(cast).contact == CUSTOMER
    assert _counts(cast) == (messages + 1, outgoing, turns)


def test_a_call_permission_reply_is_a_note(cast: Cast, dispatched: list[Any]) -> None:
    """(A welcome request is answered: tests/whatsapp/test_welcome_orders_flows.py.)"""
    _asked(cast)
    messages, outgoing, turns = _counts(cast)
    reply = {"type": "call_permission_reply",
             "call_permission_reply": {"response": "accept", "is_permanent": False,
                                       "response_source": "user_action"}}  # fmt: skip
    assert _post(_delivery(_event("wamid.c1", "interactive", reply))).status_code == 200
    note = Message.objects.get(organisation=cast.org, client_id="wamid.c1")
    assert note.role == Message.Role.SYSTEM and "aceptó" in note.text
    assert _counts(cast) == (messages + 1, outgoing, turns) and len(dispatched) == 1


# --- messages the channel cannot read ---------------------------------------------------------


def test_unsupported_messages_get_one_line_a_day_in_the_customers_language(
    cast: Cast, dispatched: list[Any]
) -> None:
    _asked(cast, "hello, I need a service for my air conditioner")
    video = _event("wamid.v1", "video", {"id": "880001", "mime_type": "video/mp4"})
    sticker = _event("wamid.k1", "sticker", {"id": "880002", "mime_type": "image/webp"})
    where = _event("wamid.l1", "location", {"latitude": -34.6, "longitude": -58.4})
    for message in (video, sticker, where, video):
        assert _post(_delivery(message)).status_code == 200
    conversation = _conversation(cast)
    lines = conversation.messages.filter(role=Message.Role.ASSISTANT)
    assert [m.text for m in lines] == [
        "For now I can read text, photos, voice notes and documents, but not this: could you "
        "write me what you need?"
    ]
    assert conversation.messages.filter(role="user").count() == 4  # the text and three noted
    assert OutgoingMessage.objects.filter(conversation=conversation).count() == 1

    lines.update(created_at=timezone.now() - datetime.timedelta(days=1))  # the next day
    # (A shared contact is read, not refused: tests/whatsapp/test_templates.py.)
    another = _event("wamid.k2", "sticker", {"id": "880003", "mime_type": "image/webp"})
    assert _post(_delivery(another)).status_code == 200
    assert lines.count() == 2 and len(dispatched) == 1


def test_a_location_sent_for_the_registrations_address_becomes_the_address(
    cast: Cast, agents: Any, dispatched: list[Any], graph: FakeGraph,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    def say(message: Any) -> None:
        with django_capture_on_commit_callbacks(execute=True):
            assert _post(_delivery(message)).status_code == 200
        with django_capture_on_commit_callbacks(execute=True):
            runner.drain(cast.org.pk, _conversation(cast).pk)

    say(_text("wamid.1", "hola"))
    say(_text("wamid.2", "Soy Marta Gómez"))
    assert _conversation(cast).state["registration"]["step"] == "address"
    say(
        _event(
            "wamid.3",
            "location",
            {
                "latitude": -34.7,
                "longitude": -58.39,
                "address": "Av. Rivadavia 1234, Lanús",
                "name": "Casa",
            },
        )
    )
    conversation = _conversation(cast)
    assert conversation.customer is not None and "registration" not in conversation.state
    assert conversation.customer.addresses.get().street == "Av. Rivadavia 1234"
    location = Message.objects.get(conversation=conversation, client_id="wamid.3")
    assert location.text == "Av. Rivadavia 1234, Lanús"
    assert location.trace["whatsapp"]["type"] == "location"


# --- tenancy ----------------------------------------------------------------------------------


def test_another_organisations_number_cannot_touch_this_organisations_messages(
    cast: Cast, dispatched: list[Any]
) -> None:
    asked = _asked(cast, "el jueves a la tarde")
    reply = _sent_reply(cast)
    before = _counts(cast)
    edit = {"original_message_id": "wamid.1",
            "message": {"type": "text", "text": {"body": "otra cosa"}}}  # fmt: skip
    system = {"body": "changed", "wa_id": NEW_NUMBER, "type": "user_changed_number"}
    for message in (
        _reaction("wamid.r1", "wamid.out1"),
        _reaction("wamid.r2", "wamid.1"),
        _event("wamid.e1", "edit", edit),
        _event("wamid.d1", "revoke", {"original_message_id": "wamid.1"}),
        _event("wamid.s1", "system", system),
    ):
        body = _delivery(message, number=OTHER_NUMBER)
        assert _post(body, secret=OTHER_SECRET).status_code == 200
    asked.refresh_from_db()
    reply.refresh_from_db()
    assert asked.text == "el jueves a la tarde" and asked.trace.keys() == {"whatsapp"}
    assert "whatsapp_reaction" not in reply.trace
    assert _conversation(cast).contact == CUSTOMER
    assert _counts(cast) == before
    assert not Message.objects.filter(organisation=cast.other_org).exists()
