"""Working memory (O9): the summary is rewritten after every turn from what the turn did (who
and what is under discussion, job numbers, approvals waiting, the question left open), and the
next turn's intake loads it with the last messages and the customer's profile."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from agents.context import TurnContext
from business.profiles import customer_profile_learn, profile_field
from copilot import runner, tasks
from copilot.models import Conversation
from copilot.orchestration import engines
from copilot.orchestration import memory as wm
from copilot.services import message_add
from tests import factories
from tests.conftest import Cast
from tests.copilot.conftest import ScriptedRouter, task
from tests.copilot.turns import answer

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("registry", "handlers"),
]


def test_the_summary_is_kept_current_after_each_turn(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    factories.make_technician(cast.org)
    monday = factories.next_monday()
    router.script["alta de Gómez"] = [task("create_customer", customer="Nora Gómez")]
    router.script["agendale service"] = [
        task("book_job", service="Service de aire", date=monday, time="09:00")
    ]
    assert conversation.summary == ""

    answer(conversation, cast.operator.pk, "alta de Gómez")
    conversation.refresh_from_db()
    first = conversation.summary
    customer_id = conversation.state["customer_id"]
    assert f"customer: Nora Gómez (#{customer_id})" in first
    assert "done: create_customer customer" in first
    assert "asked: alta de Gómez [create_customer]" in first

    answer(conversation, cast.operator.pk, "agendale service")
    conversation.refresh_from_db()
    job_id = conversation.state["job_id"]
    summary = conversation.summary
    assert f"book_job job #{job_id}" in summary and monday.isoformat() in summary
    assert "asked: agendale service [book_job]" in summary
    assert "asked: alta de Gómez" in summary  # the earlier ask is kept
    records = conversation.state[wm.RECORDS]
    assert [(r["kind"], r["intent"]) for r in records] == [
        ("customer", "create_customer"), ("job", "book_job"),
    ]  # fmt: skip
    assert records[1]["message"] is not None  # the message that asked for it


def test_the_summary_names_approvals_still_waiting_until_decided(
    cast: Cast,
    conversation: Conversation,
    router: ScriptedRouter,
    registry: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scheduling = registry["scheduling"]
    scheduling.requires_approval_for = ["job_cancel"]
    scheduling.save()
    customer = factories.make_customer(cast.org, "Ana Ríos")
    job = factories.make_job(cast.org, customer)
    conversation.state = {"job_id": job.pk, "customer_id": customer.pk}
    conversation.save()
    router.script["cancelalo"] = [task("cancel_job")]

    answer(conversation, cast.operator.pk, "cancelalo")

    conversation.refresh_from_db()
    held = conversation.state[wm.HELD]
    assert len(held) == 1
    assert f"waiting for approval: #{held[0]}" in conversation.summary

    # A manager decides: the decision turn brings the summary up to date at once.
    monkeypatch.setattr(tasks, "dispatch", lambda organisation_id, conversation_id: True)
    client = Client()
    client.force_login(cast.manager)
    assert client.post(f"/approvals/{held[0]}/decide/", {"decision": "reject"}).status_code == 302
    runner.drain(cast.org.pk, conversation.pk)
    conversation.refresh_from_db()
    assert "waiting for approval" not in conversation.summary
    assert conversation.summary.startswith(f"customer: (#{customer.pk})")  # the facts stay
    assert "asked: cancelalo [cancel_job]" in conversation.summary


def test_the_summary_stays_bounded(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    long = "buscá " + "muy " * 200 + "lejos"
    for _ in range(6):
        answer(conversation, cast.operator.pk, long)
    conversation.refresh_from_db()
    lines = conversation.summary.splitlines()
    assert len(lines) <= wm.SUMMARY_LINES
    assert all(len(line) <= wm.LINE_CHARS for line in lines)


def test_the_same_state_gives_the_same_summary() -> None:
    state = {"customer_id": 4, "customer_label": "Ana", "last_intents": ["search_customer"]}
    assert wm.summarize(state, "", "buscá a Ana") == wm.summarize(state, "", "buscá a Ana")


def test_intake_loads_the_summary_the_last_messages_and_the_profile(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    customer = factories.make_customer(cast.org, "Ana Ríos")
    router.script["buscá a Ana"] = [task("search_customer", customer="Ana")]
    answer(conversation, cast.operator.pk, "buscá a Ana")
    conversation.refresh_from_db()
    conversation.state = {**conversation.state, "customer_id": customer.pk}
    conversation.save()
    customer_profile_learn(
        organisation=cast.org, customer_id=customer.pk,
        fields={"register": profile_field("usted", ["message:1"], timezone.now())},
    )  # fmt: skip

    memory = wm.load_working_memory(conversation, before_message_id=None)

    assert memory.summary == conversation.summary and "asked: buscá a Ana" in memory.summary
    assert [m.text for m in memory.recent][0] == "buscá a Ana"
    assert memory.profile["register"]["value"] == "usted"


def test_the_models_read_the_summary_instead_of_older_messages(
    cast: Cast, conversation: Conversation, settings: Any
) -> None:
    settings.COPILOT_LLM_HISTORY, settings.COPILOT_LLM_HISTORY_WITH_SUMMARY = 10, 4
    for number in range(8):
        message_add(conversation=conversation, role="user", text=f"mensaje {number}")
    ctx = TurnContext(
        organisation=cast.org, user=cast.operator, conversation_id=conversation.pk,
        now=timezone.now(), turn_id="t",
    )  # fmt: skip

    assert len(engines.history_for(ctx)) == 8  # no summary yet: the bounded history
    recent = engines.history_for(ctx, summarised=True)
    assert [m["content"] for m in recent] == [f"mensaje {n}" for n in range(4, 8)]


def test_the_chat_page_shows_what_the_copilot_remembers(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    router.script["alta de Gómez"] = [task("create_customer", customer="Nora Gómez")]
    client = Client()
    client.force_login(cast.operator)
    empty = client.get(reverse("chat_detail", args=[conversation.pk])).content.decode()
    assert 'data-testid="memory"' not in empty

    answer(conversation, cast.operator.pk, "alta de Gómez")

    page = client.get(reverse("chat_detail", args=[conversation.pk])).content.decode()
    assert 'data-testid="memory"' in page
    # In the reader's words, not the model's summary: no intent name, no "customer:".
    memory = page.split('data-testid="memory"')[1].split("</details>")[0]
    assert "<strong>Cliente del que se habla:</strong> <span>Nora Gómez</span>" in memory
    assert "Pediste (dar de alta al cliente)" in memory and "alta de Gómez" in memory
    assert "create_customer" not in memory and "customer:" not in memory

    # A question in English after it: each ask keeps its own language.
    router.script["who owes us money?"] = [task("payment_status")]
    answer(conversation, cast.operator.pk, "who owes us money?")
    page = client.get(reverse("chat_detail", args=[conversation.pk])).content.decode()
    memory = page.split('data-testid="memory"')[1].split("</details>")[0]
    assert '<span lang="es">alta de Gómez</span>' in memory
    assert '<span lang="en">who owes us money?</span>' in memory
