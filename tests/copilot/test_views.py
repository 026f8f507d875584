"""The chat page: the stored conversation, rendered once, with its consulted footers, and what
the panel's script needs to resume from it."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from copilot.intake import accept_message
from copilot.models import Message
from copilot.services import conversation_create, message_add
from tests import factories
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
    # In its own language, marked so (a Spanish message on an English screen is read as Spanish).
    assert page.count('<div class="msg-text" lang="es">cancelá el trabajo de Ana</div>') == 1
    assert 'class="pill pill-ask" data-agent="scheduling"' in page  # a question, not a failure
    assert 'class="pill pill-bad" data-agent="financial"' in page
    assert "2 agentes · 2 pasos" in page
    client.force_login(cast.manager)  # a supervisor: no trace link without a turn, no error
    supervised = client.get(reverse("chat_detail", args=[conversation.pk]))
    assert supervised.status_code == 200 and "data-trace-link" not in supervised.content.decode()


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


# --- conversation privacy: one's own, or read-only supervision ------------------------------


def test_an_operator_cannot_open_a_colleagues_conversation(client: Client, cast: Cast) -> None:
    conversation = conversation_create(organisation=cast.org, user=cast.operator, channel="panel")
    colleague = factories.make_user(cast.org, "operator", "otra")
    client.force_login(colleague)

    response = client.get(reverse("chat_detail", args=[conversation.pk]))

    assert response.status_code == 404


def test_an_outsider_gets_404_for_another_organisations_conversation(
    client: Client, cast: Cast
) -> None:
    conversation = conversation_create(organisation=cast.org, user=cast.operator, channel="panel")
    client.force_login(cast.outsider)
    assert client.get(reverse("chat_detail", args=[conversation.pk])).status_code == 404


def test_the_owner_sees_the_composer_and_no_supervision_banner(client: Client, cast: Cast) -> None:
    conversation = conversation_create(organisation=cast.org, user=cast.operator, channel="panel")
    client.force_login(cast.operator)

    page = client.get(reverse("chat_detail", args=[conversation.pk])).content.decode()

    assert 'id="chat-form"' in page
    assert 'data-testid="supervision"' not in page and "data-read-only" not in page


@pytest.mark.parametrize(
    ("reader", "owner", "language", "banner"),
    [
        ("manager", "operator", "es-ar", "Supervisión: conversación de Olga Pérez, solo lectura"),
        ("admin", "operator", "en", "Supervision: Olga Pérez’s conversation, read only"),
        ("admin", "manager", "es-ar", "Supervisión: conversación de Olga Pérez, solo lectura"),
    ],
)
def test_a_supervisor_reads_a_members_conversation_labelled_and_without_composer(
    client: Client, cast: Cast, reader: str, owner: str, language: str, banner: str
) -> None:
    member = getattr(cast, owner)
    member.first_name, member.last_name = "Olga", "Pérez"
    member.save()
    conversation = conversation_create(organisation=cast.org, user=member, channel="panel")
    message_add(
        conversation=conversation, role=Message.Role.USER, text="reprogramá a Ana", language="es"
    )
    client.force_login(getattr(cast, reader))

    response = client.get(
        reverse("chat_detail", args=[conversation.pk]), HTTP_ACCEPT_LANGUAGE=language
    )
    page = response.content.decode()

    assert response.status_code == 200
    assert banner in page
    assert "reprogramá a Ana" in page
    assert 'data-read-only="true"' in page
    assert 'id="chat-form"' not in page and 'id="chat-input"' not in page


def test_a_manager_cannot_read_an_admins_or_another_managers_conversation(
    client: Client, cast: Cast
) -> None:
    peer = factories.make_user(cast.org, "manager", "otro-gerente")
    client.force_login(cast.manager)
    for owner in (cast.admin, peer):
        conversation = conversation_create(organisation=cast.org, user=owner, channel="panel")
        assert client.get(reverse("chat_detail", args=[conversation.pk])).status_code == 404


def test_an_ownerless_conversation_is_read_only_for_managers_and_hidden_from_operators(
    client: Client, cast: Cast
) -> None:
    # A schedule's conversation is hidden from operators; a customer's WhatsApp one is not (they
    # may take it over: tests/whatsapp/test_customers.py).
    scheduled = conversation_create(organisation=cast.org, user=None, channel="schedule")
    conversation = conversation_create(organisation=cast.org, user=None, channel="whatsapp")
    client.force_login(cast.operator)
    assert client.get(reverse("chat_detail", args=[scheduled.pk])).status_code == 404

    client.force_login(cast.manager)
    page = client.get(reverse("chat_detail", args=[conversation.pk])).content.decode()
    assert "Supervisión: conversación de WhatsApp, solo lectura" in page


def test_the_conversation_list_shows_only_ones_own(client: Client, cast: Cast) -> None:
    theirs = conversation_create(organisation=cast.org, user=cast.operator, channel="panel")
    mine = conversation_create(organisation=cast.org, user=cast.manager, channel="panel")
    client.force_login(cast.manager)

    page = client.get(reverse("chat_detail", args=[mine.pk])).content.decode()

    assert reverse("chat_detail", args=[mine.pk]) in page
    assert reverse("chat_detail", args=[theirs.pk]) not in page
