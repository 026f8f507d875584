"""Profile extraction by a model (P3, llm engine): structured output through one function
call, checked like untrusted input, bounded; any fault leaves the deterministic fields."""

from __future__ import annotations

from typing import Any

import pytest

from business.models import CustomerProfile, Organisation
from copilot import profiles
from copilot.models import Conversation
from copilot.services import conversation_create, message_add
from testing import scripted
from testing.scripted import ScriptedServer
from tests import factories
from tests.conftest import Cast

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def about_ana(cast: Cast) -> tuple[Conversation, Any, Any]:
    cast.org.engine = Organisation.Engine.LLM
    cast.org.save(update_fields=["engine"])
    ana = factories.make_customer(cast.org, "Ana Ríos")
    conversation = conversation_create(organisation=cast.org, user=cast.operator)
    said = message_add(
        conversation=conversation, role="user", text="Ana dice que el timbre no anda, toquen el 3B"
    )
    conversation.state = {"customer_id": ana.pk}
    conversation.save()
    return conversation, ana, said


def test_the_models_notes_are_kept_with_the_messages_they_cite(
    cast: Cast, server: ScriptedServer, about_ana: tuple[Conversation, Any, Any]
) -> None:
    conversation, ana, said = about_ana
    server.add(
        scripted.tool_calls([(
            "profile_update",
            {
                "address_notes": {"value": "Timbre roto: tocar el 3B", "message_ids": [said.pk]},
                "sensitivities": {"value": "Odia esperar", "message_ids": [999_999]},
                "register": {"value": "muy formal", "message_ids": [said.pk]},
            },
        )])
    )  # fmt: skip

    profiles.extract_for_conversation(cast.org.pk, conversation.pk)

    fields = CustomerProfile.objects.get(customer=ana).fields
    notes = fields["address_notes"]
    assert notes["value"].endswith("; Timbre roto: tocar el 3B")  # added to the address
    assert f"message:{said.pk}" in notes["sources"] and notes["sources"][0].startswith("address:")
    assert "sensitivities" not in fields  # cited a message it was never shown
    assert "register" not in fields  # not a register
    request = server.requests[0]
    assert request["tools"][0]["function"]["name"] == "profile_update"
    assert request["max_tokens"] <= 300


@pytest.mark.parametrize(
    "fault",
    [
        scripted.status(500),
        scripted.hang(2.0),
        scripted.tool_calls([("profile_update", "{not json")]),
        scripted.text("No sé."),
    ],
    ids=["server error", "hangs", "invalid arguments", "no call"],
)
def test_any_model_fault_keeps_the_deterministic_profile(
    cast: Cast,
    server: ScriptedServer,
    about_ana: tuple[Conversation, Any, Any],
    fault: scripted.Reply,
) -> None:
    conversation, ana, _said = about_ana
    server.add(fault)

    profiles.extract_for_conversation(cast.org.pk, conversation.pk)

    fields = CustomerProfile.objects.get(customer=ana).fields
    assert fields["address_notes"]["value"] == str(ana.primary_address)
    assert fields["address_notes"]["sources"] == [f"address:{ana.primary_address.pk}"]
