"""Clarification with loop prevention (O8) on the embedded engine, end to end on the demo.

The same harness as tests/copilot/test_intents_e2e.py: real graph, router, handlers and tools
over `manage.py load_demo`. A request that names a customer with several open jobs gets a
question; the answer resumes the pending intent without reclassifying it; two unsettling answers
in a row make the third turn take its best choice and say so; "olvidalo" or a new request drops
the pending question. A reply that does not answer it — a customer search, garbage, "no sé" —
never resumes it: nothing is written from it, and "no sé" opens no ticket (issue 17, item 6).
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from django.utils import timezone

from approvals.models import PendingAction
from business.models import EscalationTicket, Job
from copilot.models import Conversation
from copilot.orchestration.clarify import PENDING
from tests.copilot.demo_harness import (
    OPEN,
    Demo,
    Turn,
    ask,
    new_conversation,
)

pytestmark = pytest.mark.one_router  # one trained router for the module (tests/copilot/conftest.py)


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


def _statuses(jobs: list[Job]) -> dict[int, str]:
    return dict(Job.objects.filter(pk__in=[job.pk for job in jobs]).values_list("pk", "status"))


def _ended(turn: Turn) -> dict[str, Any]:
    """The step's outcome: the log folds a step's end into its start (copilot/turnlog.py)."""
    return next(e for e in turn.events if e["type"] == "agent_start" and "success" in e)


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
    second = ask(demo, conversation, f"el de {name}")  # an answer that fits every job listed
    assert _ended(second).get("clarifying") is True
    pending = _pending(conversation)
    assert pending is not None and pending["count"] == 2

    third = ask(demo, conversation, "cualquiera")

    assert third.trace["routed_by"] == "clarification"
    assert _ended(third).get("clarifying") is not True
    assert f"#{jobs[0].pk}" in third.reply  # the soonest job still ahead
    assert not third.reply.rstrip().endswith("?")
    assert _pending(conversation) is None


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        ("olvidalo", "Listo, lo dejo: no voy a cancelar el trabajo"),
        ("Olvídalo.", "Listo, lo dejo: no voy a cancelar el trabajo"),
        ("cancelá eso", "Listo, lo dejo: no voy a cancelar el trabajo"),
        ("forget it", "OK, dropped: I won't cancel the job"),
    ],
)
def test_never_mind_drops_the_pending_question_and_cancels_nothing(
    demo: Demo, reply: str, said: str
) -> None:
    name, jobs = _busy_customer(demo)
    conversation = new_conversation(demo)
    ask(demo, conversation, f"cancelá el trabajo de {name}")

    dropped = ask(demo, conversation, reply)

    assert dropped.trace["clarification"]["verdict"] == "never_mind"
    assert dropped.runs == []  # read as nothing to do: no cancel_job, not even a yielded one
    assert dropped.reply.startswith(said)
    assert not PendingAction.objects.filter(organisation=demo.org).exists()
    assert _statuses(jobs) == {job.pk: job.status for job in jobs}
    assert _pending(conversation) is None


def test_never_mind_with_no_question_open_does_nothing(demo: Demo) -> None:
    conversation = new_conversation(demo)

    turn = ask(demo, conversation, "olvidalo")

    assert turn.runs == []
    assert turn.reply == "Dale, no hago nada."


def test_a_cancel_request_that_names_a_listed_job_is_the_answer(demo: Demo) -> None:
    name, jobs = _busy_customer(demo)
    conversation = new_conversation(demo)
    ask(demo, conversation, f"cancelá el trabajo de {name}")

    answered = ask(demo, conversation, f"cancelá el trabajo #{jobs[1].pk}")

    assert answered.trace["routed_by"] == "clarification"
    (action,) = PendingAction.objects.filter(organisation=demo.org, tool="job_cancel")
    assert action.arguments["job_id"] == jobs[1].pk


def test_a_customer_search_does_not_answer_which_job_a_vehicle_is_for(demo: Demo) -> None:
    name, jobs = _busy_customer(demo)
    vehicles = {job.pk: job.vehicle_id for job in Job.objects.filter(organisation=demo.org)}
    conversation = new_conversation(demo)
    asked = ask(demo, conversation, "asigná un vehículo")
    pending = _pending(conversation)
    assert asked.intents == ["assign_vehicle"]
    assert pending is not None and pending["slot"] == "job"

    search = ask(demo, conversation, f"buscá al cliente {name}")

    assert search.trace["clarification"]["verdict"] == "new_request"
    assert search.trace["routed_by"] == "embedded"
    assert search.intents == ["search_customer"]
    assert f"#{jobs[0].pk}" in search.reply  # the search's own answer: the customer's jobs
    assert {job.pk: job.vehicle_id for job in Job.objects.filter(organisation=demo.org)} == (
        vehicles
    )
    assert _pending(conversation) is None


def test_garbage_after_two_questions_ends_with_a_summary_and_no_cancellation(
    demo: Demo,
) -> None:
    name, jobs = _busy_customer(demo)
    conversation = new_conversation(demo)
    ask(demo, conversation, f"cancelá el trabajo de {name}")
    ask(demo, conversation, f"el de {name}")
    pending = _pending(conversation)
    assert pending is not None and pending["count"] == 2  # the limit: next comes best effort

    garbage = ask(demo, conversation, "<div class='x'><p>asdf</p></div>&nbsp; qwrtzp")

    assert garbage.trace["clarification"]["verdict"] == "unanswered"
    assert garbage.runs == []
    assert garbage.reply.startswith(
        "No pude cancelar el trabajo: hay varios trabajos abiertos y no sé cuál es. "
        "No hice ningún cambio."
    )
    assert "?" not in garbage.reply
    assert not PendingAction.objects.filter(organisation=demo.org).exists()
    assert _statuses(jobs) == {job.pk: job.status for job in jobs}
    assert _pending(conversation) is None


def test_three_dont_knows_open_no_ticket(demo: Demo) -> None:
    name, jobs = _busy_customer(demo)
    tickets = EscalationTicket.objects.filter(organisation=demo.org).count()
    conversation = new_conversation(demo)
    ask(demo, conversation, f"cancelá el trabajo de {name}")

    turns = [ask(demo, conversation, reply) for reply in ("no sé", "ni idea", "no sé")]

    assert turns[0].trace["clarification"]["verdict"] == "unanswered"
    assert turns[0].reply.startswith("No pude cancelar el trabajo")
    ran = {intent for turn in turns for intent in turn.intents}
    assert not ran & {"frustration_detected", "escalate", "complaint", "cancel_job"}
    assert EscalationTicket.objects.filter(organisation=demo.org).count() == tickets
    assert not PendingAction.objects.filter(organisation=demo.org).exists()
    assert _statuses(jobs) == {job.pk: job.status for job in jobs}


def test_a_new_request_is_not_read_as_the_answer(demo: Demo) -> None:
    name, _jobs = _busy_customer(demo)
    conversation = new_conversation(demo)
    ask(demo, conversation, f"cancelá el trabajo de {name}")

    other = ask(
        demo, conversation, "¿en qué horario atienden los sábados y los domingos en la oficina?"
    )

    assert other.trace["routed_by"] == "embedded"
    assert other.intents == ["hours"]


def test_an_out_of_scope_question_drops_the_pending_one_and_is_answered_as_such(
    demo: Demo,
) -> None:
    """Asked which job to cancel, the operator asks about last night's match: the reply says
    what the copilot does (out of scope), not only what it did not cancel; nothing is cancelled."""
    name, jobs = _busy_customer(demo)
    conversation = new_conversation(demo)
    ask(demo, conversation, f"cancelá el trabajo de {name}")
    assert _pending(conversation) is not None

    other = ask(demo, conversation, "¿quién ganó el partido anoche?")

    assert other.trace["clarification"]["verdict"] == "new_request"
    assert other.intents == ["unknown"]
    assert not other.trace["notice"]
    assert _pending(conversation) is None
    assert all(status != Job.Status.CANCELLED for status in _statuses(jobs).values())


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


def test_a_question_asked_on_an_open_direct_line_is_answered_on_it(demo: Demo) -> None:
    name, jobs = _busy_customer(demo)
    conversation = new_conversation(demo)
    ask(demo, conversation, "#agenda")  # the line to Agenda stays open

    asked = ask(demo, conversation, f"cancelá el trabajo de {name}")
    assert _ended(asked).get("clarifying") is True
    answered = ask(demo, conversation, f"#{jobs[1].pk}")

    # The answer resumes the question (not a fresh message to the agent), still on the line.
    assert answered.trace["routed_by"] == "clarification"
    assert answered.intents == ["cancel_job"] and f"#{jobs[1].pk}" in answered.reply
    assert answered.trace["direct_line"]["sticky"] is True
    assert _pending(conversation) is None
    conversation.refresh_from_db()
    assert conversation.state.get("direct_line") == "scheduling"
