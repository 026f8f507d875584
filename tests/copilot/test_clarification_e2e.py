"""Clarification with loop prevention (O8) on the embedded engine, end to end on the demo.

The same harness as tests/copilot/test_intents_e2e.py: real graph, router, handlers and tools
over `manage.py load_demo`. A request that names a customer with several open jobs gets a
question; the answer resumes the pending intent without reclassifying it; two unsettling answers
in a row make the third turn take its best choice and say so; "olvidalo" or a new request drops
the pending question.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest
from django.utils import timezone

from business.models import Job
from copilot.clarify import PENDING
from copilot.models import Conversation
from tests.copilot.test_intents_e2e import (
    OPEN,
    Demo,
    DemoDatabase,
    Turn,
    ask,
    new_conversation,
    open_demo_database,
    pristine_demo,
)


@pytest.fixture(scope="module")
def demo_database(django_db_setup: None, django_db_blocker: Any) -> Iterator[DemoDatabase]:
    yield from open_demo_database(django_db_blocker)


@pytest.fixture(autouse=True)
def fresh_routers() -> None:
    """One trained router for the module (see test_intents_e2e.fresh_routers)."""


@pytest.fixture
def demo(demo_database: DemoDatabase) -> Demo:
    return pristine_demo(demo_database, {})


def _busy_customer(demo: Demo) -> tuple[str, list[Job]]:
    """A customer with at least three open jobs still ahead (so one answer can fail to settle)."""
    ahead = Job.objects.filter(
        organisation=demo.org, status__in=OPEN, scheduled_start__gt=timezone.now()
    ).select_related("customer")
    by_customer: dict[int, list[Job]] = {}
    for job in ahead.order_by("scheduled_start"):
        by_customer.setdefault(job.customer_id, []).append(job)
    name, jobs = next(
        (jobs[0].customer.name, jobs) for jobs in by_customer.values() if len(jobs) >= 3
    )
    return name, jobs


def _pending(conversation: Conversation) -> dict[str, Any] | None:
    conversation.refresh_from_db()
    return conversation.state.get(PENDING)


def _ended(turn: Turn) -> dict[str, Any]:
    return next(e for e in turn.events if e["type"] == "agent_end")


def test_the_answer_resumes_the_pending_intent_without_reclassifying(demo: Demo) -> None:
    name, jobs = _busy_customer(demo)
    conversation = new_conversation(demo)

    asked = ask(demo, conversation, f"cancelá el trabajo de {name}")

    assert asked.intents == ["cancel_job"]
    assert _ended(asked).get("clarifying") is True
    (consulted,) = next(e for e in asked.events if e["type"] == "consulted")["agents"]
    assert consulted.get("clarifying") is True  # the footer shows a question, not a failure
    pending = _pending(conversation)
    assert pending is not None
    assert (pending["intent"], pending["slot"], pending["count"]) == ("cancel_job", "job_choice", 1)

    answered = ask(demo, conversation, f"#{jobs[1].pk}")

    assert answered.trace["routed_by"] == "clarification"
    assert [s["source"] for s in answered.trace["steps"]] == ["clarification"]
    assert answered.intents == ["cancel_job"]
    assert f"#{jobs[1].pk}" in answered.reply
    assert _pending(conversation) is None


def test_after_two_questions_the_third_turn_takes_the_soonest_and_says_so(demo: Demo) -> None:
    name, jobs = _busy_customer(demo)
    conversation = new_conversation(demo)

    ask(demo, conversation, f"cancelá el trabajo de {name}")
    second = ask(demo, conversation, "mmm no sé, uno de esos")
    assert _ended(second).get("clarifying") is True
    pending = _pending(conversation)
    assert pending is not None and pending["count"] == 2

    third = ask(demo, conversation, "cualquiera")

    assert third.trace["routed_by"] == "clarification"
    assert _ended(third).get("clarifying") is not True
    assert f"#{jobs[0].pk}" in third.reply  # the soonest job still ahead
    assert not third.reply.rstrip().endswith("?")
    assert _pending(conversation) is None


def test_never_mind_drops_the_pending_question(demo: Demo) -> None:
    name, _jobs = _busy_customer(demo)
    conversation = new_conversation(demo)
    ask(demo, conversation, f"cancelá el trabajo de {name}")

    dropped = ask(demo, conversation, "olvidalo")

    assert dropped.trace["routed_by"] == "embedded"
    # Read afresh: nothing resumed, nothing cancelled (the classifier alone is unsure of it).
    assert all(run.yielded or run.intent != "cancel_job" for run in dropped.runs)
    assert _pending(conversation) is None


def test_a_new_request_is_not_read_as_the_answer(demo: Demo) -> None:
    name, _jobs = _busy_customer(demo)
    conversation = new_conversation(demo)
    ask(demo, conversation, f"cancelá el trabajo de {name}")

    other = ask(
        demo, conversation, "¿en qué horario atienden los sábados y los domingos en la oficina?"
    )

    assert other.trace["routed_by"] == "embedded"
    assert other.intents == ["hours"]


def test_a_stale_question_is_not_resumed(demo: Demo) -> None:
    name, jobs = _busy_customer(demo)
    conversation = new_conversation(demo)
    ask(demo, conversation, f"cancelá el trabajo de {name}")
    conversation.refresh_from_db()
    state = dict(conversation.state)
    asked_at = datetime.datetime.fromisoformat(state[PENDING]["asked_at"])
    state[PENDING] = {
        **state[PENDING],
        "asked_at": (asked_at - datetime.timedelta(hours=2)).isoformat(),
    }
    Conversation.objects.filter(pk=conversation.pk).update(state=state)

    later = ask(demo, conversation, f"#{jobs[1].pk}")

    assert later.trace["routed_by"] == "embedded"
