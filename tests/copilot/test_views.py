"""The chat page: the stored conversation, rendered once, with its consulted footers, and what
the panel's script needs to resume from it."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from copilot.models import Message
from copilot.services import conversation_create, message_add
from copilot.turn import accept_message
from tests.conftest import Cast

pytestmark = pytest.mark.django_db


def test_the_conversation_renders_its_messages_and_not_as_flash_messages(
    client: Client, cast: Cast
) -> None:
    conversation = conversation_create(organisation=cast.org, user=cast.operator, channel="panel")
    message_add(
        conversation=conversation, role=Message.Role.USER, text="cancelá el trabajo de Ana",
        language="es",
    )  # fmt: skip
    consulted = [
        {"agent": "scheduling", "label": "Agenda", "intent": "cancel_job", "success": False,
         "tools": 1, "clarifying": True},
        {"agent": "financial", "label": "Finanzas", "intent": "payment_status", "success": False,
         "tools": 1},
    ]  # fmt: skip
    message_add(
        conversation=conversation, role=Message.Role.ASSISTANT, text="Hay dos trabajos. ¿Cuál es?",
        language="es", trace={"consulted": consulted},
    )  # fmt: skip
    client.force_login(cast.operator)

    page = client.get(reverse("chat_detail", args=[conversation.pk])).content.decode()

    assert "Message object" not in page
    assert page.count('<div class="msg-text">cancelá el trabajo de Ana</div>') == 1
    assert '<span class="pill pill-ask">Agenda</span>' in page  # a question, not a failure
    assert '<span class="pill pill-bad">Finanzas</span>' in page


def test_the_page_says_where_its_socket_starts_and_what_it_already_shows(
    client: Client, cast: Cast
) -> None:
    conversation = conversation_create(organisation=cast.org, user=cast.operator, channel="panel")
    message_add(
        conversation=conversation, role=Message.Role.ASSISTANT, text="¡Hola!", language="es",
        trace={"turn_id": "earlier-turn"},
    )  # fmt: skip
    queued = accept_message(
        conversation=conversation, user_id=cast.operator.pk, text="hola", client_id="tab-1"
    )
    client.force_login(cast.operator)

    page = client.get(reverse("chat_detail", args=[conversation.pk])).content.decode()

    assert "ws-connect" not in page and "ws-send" not in page  # the panel owns its socket
    assert f'data-conversation-id="{conversation.pk}"' in page
    # The queued turn's events (its `accepted` first) are replayed to the page.
    assert f'data-replay-from="{queued.event["seq"] - 1}"' in page
    assert f'id="message-{queued.message_id}" data-client-id="tab-1"' in page
    assert 'data-turn="earlier-turn"' in page
