"""The CopilotPanel websocket on the real ASGI app (copilot.asgi.application)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore

from agents.services import agents_install_defaults
from copilot.asgi import application
from copilot.events import EVENT_TYPES
from copilot.models import Conversation, Message
from copilot.services import conversation_create
from tests.conftest import Cast

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = b"http://127.0.0.1:8000"


def _session_cookie(user: Any) -> bytes:
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.save()
    return f"{settings.SESSION_COOKIE_NAME}={session.session_key}".encode()


async def _connect(
    user: Any, conversation_id: int, origin: bytes = ORIGIN
) -> WebsocketCommunicator:
    headers = [(b"origin", origin)]
    if user is not None:
        headers.append((b"cookie", await sync_to_async(_session_cookie)(user)))
    return WebsocketCommunicator(application, f"/ws/chat/{conversation_id}/", headers=headers)


async def _turn_events(
    communicator: WebsocketCommunicator, timeout: float = 30
) -> list[dict[str, Any]]:
    events = []
    while True:
        event = json.loads(await communicator.receive_from(timeout=timeout))
        events.append(event)
        if event["type"] == "completed":
            return events


@pytest.fixture
def conversation(cast: Cast) -> Conversation:
    agents_install_defaults(organisation=cast.org)
    return conversation_create(organisation=cast.org, user=cast.operator)


async def test_a_turn_streams_thinking_first_and_completed_last(
    cast: Cast, conversation: Conversation
) -> None:
    communicator = await _connect(cast.operator, conversation.pk)
    connected, _ = await communicator.connect()
    assert connected
    await communicator.send_to(
        text_data=json.dumps({"type": "message", "text": "¿cuál es el horario?"})
    )
    events = await _turn_events(communicator)
    await communicator.disconnect()

    types = [event["type"] for event in events]
    assert types[0] == "thinking"
    assert types[-1] == "completed"
    assert set(types) <= EVENT_TYPES
    assert types.index("agent_start") < types.index("agent_end") < types.index("consulted")
    assert "text" in types
    assert len({event["turn_id"] for event in events}) == 1
    consulted = next(e for e in events if e["type"] == "consulted")
    assert [a["agent"] for a in consulted["agents"]] == ["general"]
    streamed = "".join(e["text"] for e in events if e["type"] == "text")
    assert streamed.strip() == events[-1]["text"].strip()
    roles = await sync_to_async(list)(conversation.messages.values_list("role", flat=True))
    assert roles == ["user", "assistant"]


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ("this is not json", "malformed"),
        (json.dumps({"type": "subscribe"}), "unknown_type"),
        (json.dumps({"type": "message", "text": "   "}), "empty"),
        (json.dumps([1, 2, 3]), "unknown_type"),
    ],
)
async def test_a_bad_frame_gets_a_clear_error_and_the_connection_survives(
    cast: Cast, conversation: Conversation, frame: str, code: str
) -> None:
    communicator = await _connect(cast.operator, conversation.pk)
    assert (await communicator.connect())[0]
    await communicator.send_to(text_data=frame)
    error = json.loads(await communicator.receive_from(timeout=10))
    assert error["type"] == "error" and error["code"] == code and error["message"]
    # Still connected, and the next good message is answered.
    await communicator.send_to(text_data=json.dumps({"type": "message", "text": "hola"}))
    events = await _turn_events(communicator)
    assert events[-1]["type"] == "completed"
    await communicator.disconnect()


async def test_a_binary_frame_is_refused(cast: Cast, conversation: Conversation) -> None:
    communicator = await _connect(cast.operator, conversation.pk)
    assert (await communicator.connect())[0]
    await communicator.send_to(bytes_data=b"\x00\x01")
    error = json.loads(await communicator.receive_from(timeout=10))
    assert error["code"] == "binary"
    await communicator.disconnect()


async def test_an_oversized_message_is_refused_and_history_is_intact(
    cast: Cast, conversation: Conversation
) -> None:
    communicator = await _connect(cast.operator, conversation.pk)
    assert (await communicator.connect())[0]
    await communicator.send_to(text_data=json.dumps({"type": "message", "text": "hola"}))
    await _turn_events(communicator)
    before = await sync_to_async(Message.objects.filter(conversation=conversation).count)()

    huge = "a" * (settings.COPILOT_MAX_MESSAGE_CHARS + 1)
    await communicator.send_to(text_data=json.dumps({"type": "message", "text": huge}))
    error = json.loads(await communicator.receive_from(timeout=10))
    assert error["type"] == "error" and error["code"] == "too_long"
    assert str(settings.COPILOT_MAX_MESSAGE_CHARS) in error["message"]

    after = await sync_to_async(Message.objects.filter(conversation=conversation).count)()
    assert after == before == 2
    await communicator.send_to(text_data=json.dumps({"type": "message", "text": "gracias, chau"}))
    assert (await _turn_events(communicator))[-1]["type"] == "completed"
    await communicator.disconnect()


async def test_an_anonymous_visitor_is_refused(cast: Cast, conversation: Conversation) -> None:
    communicator = await _connect(None, conversation.pk)
    connected, code = await communicator.connect()
    assert not connected


async def test_an_outsider_cannot_open_another_orgs_conversation(
    cast: Cast, conversation: Conversation
) -> None:
    communicator = await _connect(cast.outsider, conversation.pk)
    connected, code = await communicator.connect()
    assert not connected
    assert code == 4404
    count = await sync_to_async(Message.objects.filter(conversation=conversation).count)()
    assert count == 0


async def test_a_foreign_origin_is_refused(cast: Cast, conversation: Conversation) -> None:
    communicator = await _connect(cast.operator, conversation.pk, origin=b"http://evil.example")
    connected, _ = await communicator.connect()
    assert not connected


async def test_two_quick_messages_get_two_answers_in_order(
    cast: Cast, conversation: Conversation
) -> None:
    communicator = await _connect(cast.operator, conversation.pk)
    assert (await communicator.connect())[0]
    await communicator.send_to(text_data=json.dumps({"type": "message", "text": "hola"}))
    await communicator.send_to(
        text_data=json.dumps({"type": "message", "text": "¿a qué hora abren?"})
    )
    first = await _turn_events(communicator)
    second = await _turn_events(communicator)
    await communicator.disconnect()

    assert first[0]["turn_id"] != second[0]["turn_id"]
    # Serialised: the second turn's events all come after the first turn completed.
    assert all(event["turn_id"] == first[0]["turn_id"] for event in first)
    assert all(event["turn_id"] == second[0]["turn_id"] for event in second)
    texts = await sync_to_async(list)(
        conversation.messages.order_by("created_at", "pk").values_list("role", "text")
    )
    assert [role for role, _ in texts] == ["user", "assistant", "user", "assistant"]
    assert texts[0][1] == "hola" and texts[2][1] == "¿a qué hora abren?"


async def test_turns_of_one_conversation_never_overlap(
    cast: Cast, conversation: Conversation
) -> None:
    from copilot.locks import conversation_lock

    order: list[str] = []

    async def hold(name: str, delay: float) -> None:
        async with conversation_lock(cast.org.pk, conversation.pk):
            order.append(f"{name}-in")
            await asyncio.sleep(delay)
            order.append(f"{name}-out")

    await asyncio.gather(hold("a", 0.05), hold("b", 0), hold("c", 0))
    assert order == ["a-in", "a-out", "b-in", "b-out", "c-in", "c-out"]
