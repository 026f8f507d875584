"""The chat page: the stored conversation, rendered once, with its consulted footers."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from copilot.models import Message
from copilot.services import conversation_create, message_add
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
