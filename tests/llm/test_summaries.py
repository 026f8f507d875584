"""The model's gist in the working memory (O9, llm engine): added to the extractive facts,
bounded, and never required — any model fault leaves the extractive summary standing."""

from __future__ import annotations

import pytest

from business.models import Organisation
from copilot import memory_tasks, summaries
from copilot.models import Conversation
from copilot.orchestration import memory as wm
from copilot.services import conversation_create, message_add
from llm.models import ModelCall
from testing import scripted
from testing.scripted import ScriptedServer
from tests.conftest import Cast

pytestmark = pytest.mark.django_db(transaction=True)

FACTS = "customer: Ana Ríos (#4)\ndone: book_job job #12 Service 2026-11-24T09:00\nasked: agendá"


@pytest.fixture
def llm_org(cast: Cast) -> Organisation:
    cast.org.engine = Organisation.Engine.LLM
    cast.org.save(update_fields=["engine"])
    return cast.org


@pytest.fixture
def talked(cast: Cast, llm_org: Organisation) -> Conversation:
    conversation = conversation_create(organisation=llm_org, user=cast.operator)
    message_add(conversation=conversation, role="user", text="agendá un service para Ana")
    message_add(conversation=conversation, role="assistant", text="Agendé el #12.")
    Conversation.objects.filter(pk=conversation.pk).update(summary=FACTS)
    conversation.refresh_from_db()
    return conversation


def test_the_model_adds_the_gist_and_keeps_the_facts(
    server: ScriptedServer, talked: Conversation
) -> None:
    server.add(scripted.text("Ana pidió un service de aire.\nFalta confirmar quién va."))

    assert summaries.refresh_with_model(talked.organisation_id, talked.pk, FACTS) is True

    talked.refresh_from_db()
    assert talked.summary.splitlines() == [
        "customer: Ana Ríos (#4)",
        "done: book_job job #12 Service 2026-11-24T09:00",
        "gist: Ana pidió un service de aire.",
        "gist: Falta confirmar quién va.",
    ]
    request = server.requests[0]
    assert request["max_tokens"] <= summaries.GIST_MAX_TOKENS
    assert "<summary>" in request["messages"][1]["content"]  # the facts are fenced data
    assert ModelCall.objects.filter(purpose="summary").count() == 1  # the call left its row


@pytest.mark.parametrize(
    "fault",
    [scripted.status(500), scripted.hang(2.0), scripted.text("<|im_start|>assistant")],
    ids=["server error", "hangs past the timeout", "not an answer"],
)
def test_any_model_fault_leaves_the_extractive_summary(
    server: ScriptedServer, talked: Conversation, fault: scripted.Reply
) -> None:
    server.add(fault)

    assert summaries.refresh_with_model(talked.organisation_id, talked.pk, FACTS) is False

    talked.refresh_from_db()
    assert talked.summary == FACTS


def test_a_newer_summary_is_never_overwritten(server: ScriptedServer, talked: Conversation) -> None:
    Conversation.objects.filter(pk=talked.pk).update(summary=FACTS + "\nasked: otra cosa")

    assert summaries.refresh_with_model(talked.organisation_id, talked.pk, FACTS) is False
    assert server.requests == []  # not even asked


def test_the_gist_is_bounded(server: ScriptedServer, talked: Conversation) -> None:
    lines = [" ".join(f"palabra{line}x{word}" for word in range(40)) for line in range(8)]
    server.add(scripted.text("\n".join(lines)))

    summaries.refresh_with_model(talked.organisation_id, talked.pk, FACTS)

    talked.refresh_from_db()
    gist = [line for line in talked.summary.splitlines() if line.startswith("gist: ")]
    assert len(gist) == summaries.GIST_LINES
    assert all(len(line) <= wm.LINE_CHARS for line in gist)


def test_the_gist_is_carried_by_the_next_extractive_summary() -> None:
    previous = "customer: Ana (#4)\ngist: Ana pidió un service.\nasked: hola [greeting]"
    summary = wm.summarize({"customer_id": 4, "customer_label": "Ana"}, previous, "chau")
    assert "gist: Ana pidió un service." in summary.splitlines()


def test_an_embedded_organisation_asks_no_model(cast: Cast, server: ScriptedServer) -> None:
    conversation = conversation_create(organisation=cast.org, user=cast.operator)
    Conversation.objects.filter(pk=conversation.pk).update(summary=FACTS)
    assert summaries.refresh_with_model(cast.org.pk, conversation.pk, FACTS) is False
    assert server.requests == []


def test_the_task_given_a_deleted_conversation_ends_cleanly(cast: Cast) -> None:
    assert (
        memory_tasks.refresh_summary.delay(cast.org.pk, 999_999, FACTS).get(
            disable_sync_subtasks=False
        )
        is False
    )


def test_the_summary_request_goes_through_the_privacy_guard(
    server: ScriptedServer, talked: Conversation
) -> None:
    message_add(conversation=talked, role="user", text="su cel es 11 5555-1234, ana@example.com")
    server.add(scripted.text("Ana dejó su teléfono."))

    assert summaries.refresh_with_model(talked.organisation_id, talked.pk, FACTS) is True

    sent = str(server.requests[0]["messages"])
    assert "5555-1234" not in sent and "ana@example.com" not in sent
    assert "[TEL_1]" in sent and "[EMAIL_1]" in sent
