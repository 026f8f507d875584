"""Approvals end to end (A2–A6): a held step pauses its turn; a manager decides from the queue,
the admin or the chat; the paused turn resumes in the operator's conversation and the action runs
once — or never, when it was rejected, expired, or its records changed.

The turns here go the way every entry point's do (stored, queued, drained); the graph runs with a
scripted router and the test handlers of tests/copilot/conftest.py over the real tools.
"""

from __future__ import annotations

import datetime
import threading
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from agents.base import Mutation, Outcome, Runner, Step
from agents.models import Agent, ToolCall
from approvals import tasks as approval_tasks
from approvals.models import ApprovalEvent, PendingAction
from approvals.services import action_decide, execution_start
from business.models import Job
from copilot import eventlog, runner
from copilot.models import Conversation, Message, Turn
from copilot.orchestration import checkpoints
from copilot.services import conversation_create
from tests import factories
from tests.conftest import Cast
from tests.copilot.conftest import ScriptedRouter, job_under_discussion, task
from tests.copilot.turns import answer

pytestmark = [
    pytest.mark.django_db(transaction=True),  # runners and savers have their own connections
    pytest.mark.usefixtures("registry", "handlers"),
    pytest.mark.usefixtures("dispatched"),  # turns run by the test itself
]

Status = PendingAction.Status


@pytest.fixture
def held(cast: Cast, conversation: Conversation, router: ScriptedRouter) -> PendingAction:
    """The operator asked to cancel a job: the turn paused, the cancellation waits."""
    job_under_discussion(cast, conversation, "Claudia Bianchi")
    router.script["cancelalo"] = [task("cancel_job", 0.9)]
    turn = answer(conversation, cast.operator.pk, "cancelalo")
    assert turn.result.ok
    action = PendingAction.objects.get(organisation=cast.org, tool="job_cancel")
    assert Turn.objects.get(pk=turn.result.turn_id).status == Turn.Status.WAITING
    return action


def _job(action: PendingAction) -> Job:
    return Job.objects.get(pk=action.arguments["job_id"])


def _post(user: Any, action_id: int, decision: str, **extra: Any) -> Any:
    client = Client()
    client.force_login(user)
    return client.post(f"/approvals/{action_id}/decide/", {"decision": decision, **extra}, **{})


def _settle(conversation: Conversation) -> list[Any]:
    """Run what the decision queued in the conversation (the runner does this in production)."""
    return runner.drain(conversation.organisation_id, conversation.pk).results


def _cancellations(job: Job) -> int:
    return ToolCall.objects.filter(
        tool="job_cancel", approved=True, arguments__job_id=job.pk
    ).count()


def test_a_held_step_pauses_its_turn_with_a_checkpoint_and_a_readable_request(
    cast: Cast, conversation: Conversation, held: PendingAction
) -> None:
    job = _job(held)
    assert job.status == Job.Status.SCHEDULED
    assert held.requested_by == cast.operator and held.conversation_id == conversation.pk
    assert "Claudia Bianchi" in held.summary and "Claudia Bianchi" in held.summary_en
    assert held.snapshot and len(held.snapshot_hash) == 64
    assert held.expires_at is not None
    saved = checkpoints.saver().get_tuple(
        {
            "configurable": {
                "thread_id": checkpoints.thread_id(cast.org.pk, conversation.pk, held.turn_id)
            }
        }
    )
    assert saved is not None  # the paused graph, resumable by another process
    reply = Message.objects.filter(conversation=conversation, role="assistant").last()
    assert reply is not None and f"#{held.pk}" in reply.text


def test_approving_runs_the_action_once_and_the_operator_hears_it(
    cast: Cast, conversation: Conversation, held: PendingAction, dispatched: list[Any]
) -> None:
    response = _post(cast.manager, held.pk, "approve", reason="el cliente confirmó")
    assert response.status_code == 302
    assert dispatched == [(cast.org.pk, conversation.pk)]  # handed to a runner on commit
    [result] = _settle(conversation)
    again = _post(cast.manager, held.pk, "approve")  # a double click
    _settle(conversation)

    held.refresh_from_db()
    job = _job(held)
    assert held.status == Status.EXECUTED and held.decided_by == cast.manager
    assert job.status == Job.Status.CANCELLED
    assert _cancellations(job) == 1
    assert again.status_code == 302
    kinds = list(held.events.values_list("kind", flat=True))
    assert kinds == ["requested", "approved", "executed"]
    assert held.events.get(kind="approved").reason == "el cliente confirmó"
    assert result.ok and f"#{held.pk}" in result.text and "aprobó" in result.text
    note = Message.objects.get(conversation=conversation, role=Message.Role.SYSTEM)
    assert "aprobó" in note.text
    types = [e["type"] for e in eventlog.events_after(conversation.pk, 0)]
    assert types.count("approval_decided") == 1
    assert types.index("approval_decided") < len(types) - 1 and types[-1] == "completed"
    paused = Turn.objects.get(pk=held.turn_id)
    assert paused.status == Turn.Status.DONE


def test_rejecting_never_runs_it_and_says_why(
    cast: Cast, conversation: Conversation, held: PendingAction
) -> None:
    _post(cast.manager, held.pk, "reject", reason="el cliente se arrepintió")
    [result] = _settle(conversation)

    held.refresh_from_db()
    assert held.status == Status.REJECTED
    assert _job(held).status == Job.Status.SCHEDULED
    assert "rechazó" in result.text and "el cliente se arrepintió" in result.text
    assert not ToolCall.objects.filter(tool="job_cancel", approved=True).exists()


def test_an_expired_action_cannot_be_approved_and_the_requester_is_told(
    cast: Cast, conversation: Conversation, held: PendingAction
) -> None:
    PendingAction.objects.filter(pk=held.pk).update(
        expires_at=timezone.now() - datetime.timedelta(minutes=1)
    )
    decided = action_decide(
        organisation_id=cast.org.pk, action_id=held.pk, actor=cast.manager, approve=True
    )
    [result] = _settle(conversation)

    held.refresh_from_db()
    assert (decided.ok, decided.code) == (False, "expired")
    assert held.status == Status.EXPIRED
    assert _job(held).status == Job.Status.SCHEDULED
    assert "Venció" in result.text


def test_the_expiry_schedule_expires_due_actions_and_tells_the_conversation(
    cast: Cast, conversation: Conversation, held: PendingAction
) -> None:
    PendingAction.objects.filter(pk=held.pk).update(
        expires_at=timezone.now() - datetime.timedelta(seconds=1)
    )
    assert approval_tasks.expire_due() == 1
    assert approval_tasks.expire_due() == 0  # idempotent
    [result] = _settle(conversation)
    held.refresh_from_db()
    assert held.status == Status.EXPIRED and "Venció" in result.text


def test_a_changed_record_makes_the_action_stale_and_both_are_told(
    cast: Cast, conversation: Conversation, held: PendingAction
) -> None:
    job = _job(held)
    Job.objects.filter(pk=job.pk).update(
        scheduled_start=job.scheduled_start + datetime.timedelta(hours=2),
        scheduled_end=job.scheduled_end + datetime.timedelta(hours=2),
    )
    _post(cast.manager, held.pk, "approve")
    [result] = _settle(conversation)

    held.refresh_from_db()
    assert held.status == Status.STALE
    assert _job(held).status == Job.Status.SCHEDULED
    assert "no la hice" in result.text and "horario" in result.text
    queue = Client()
    queue.force_login(cast.manager)
    page = queue.get(f"/approvals/{held.pk}/").content.decode()
    assert "horario" in page or "start" in page


def test_a_record_gone_since_is_told_in_the_readers_language(
    cast: Cast, conversation: Conversation, held: PendingAction
) -> None:
    """The job was cancelled another way while the cancellation waited: the manager's approval
    runs nothing, and the chat, the queue and the audit trail say why in Spanish — not the
    tool's English ("job #12 is cancelled: nothing to cancel")."""
    job = _job(held)
    Job.objects.filter(pk=job.pk).update(status=Job.Status.CANCELLED)
    _post(cast.manager, held.pk, "approve")
    [result] = _settle(conversation)

    held.refresh_from_db()
    assert held.status == Status.STALE
    assert f"ya no se puede: el trabajo #{job.pk} está cancelado." in result.text
    assert "nothing to" not in result.text
    page = Client()
    page.force_login(cast.manager)
    body = page.get(f"/approvals/{held.pk}/", HTTP_ACCEPT_LANGUAGE="es-AR").content.decode()
    assert f"El trabajo #{job.pk} está cancelado." in body
    assert "nothing to" not in body and "is cancelled" not in body


def test_an_operator_cannot_decide_by_http_or_in_the_chat(
    cast: Cast, conversation: Conversation, held: PendingAction
) -> None:
    assert _post(cast.operator, held.pk, "approve").status_code == 403
    turn = answer(conversation, cast.operator.pk, f"aprobá la #{held.pk}")

    held.refresh_from_db()
    assert held.status == Status.PENDING
    assert "Solo un gerente" in turn.result.text
    assert held.events.filter(kind=ApprovalEvent.Kind.REFUSED, actor=cast.operator).exists()


def test_a_manager_decides_in_the_chat_by_number_or_by_words(
    cast: Cast, held: PendingAction
) -> None:
    managers_chat = conversation_create(organisation=cast.org, user=cast.manager, channel="panel")
    vague = answer(managers_chat, cast.manager.pk, "aprobá la de Pérez")
    assert "Ninguna acción pendiente coincide" in vague.result.text
    held.refresh_from_db()
    assert held.status == Status.PENDING

    turn = answer(managers_chat, cast.manager.pk, "aprobá la cancelación de Bianchi")
    held.refresh_from_db()
    assert held.status == Status.APPROVED and held.decided_by == cast.manager
    assert "Aprobaste" in turn.result.text
    origin = Conversation.objects.get(pk=held.conversation_id)
    _settle(origin)
    held.refresh_from_db()
    assert held.status == Status.EXECUTED


def test_another_organisations_manager_sees_nothing_and_cannot_decide(
    cast: Cast, held: PendingAction
) -> None:
    foreign_manager = factories.make_user(cast.other_org, "manager", username="gerente_norte")
    client = Client()
    client.force_login(foreign_manager)
    assert client.get(f"/approvals/{held.pk}/").status_code == 404
    assert _post(foreign_manager, held.pk, "approve").status_code == 404
    assert "Bianchi" not in client.get("/approvals/?state=all").content.decode()
    theirs = conversation_create(organisation=cast.other_org, user=foreign_manager, channel="panel")
    turn = answer(theirs, foreign_manager.pk, f"aprobá la #{held.pk}")
    assert "No hay ninguna acción" in turn.result.text
    held.refresh_from_db()
    assert held.status == Status.PENDING


def _create_customer_or_hold(step: Step, runner_: Runner) -> Outcome:
    name = step.entities.customer or "Sin Nombre"
    result = runner_.call("customer_create", name=name, street="Av. Mitre 100", zone="Sur")
    if result.data.get("held"):
        return Outcome(text=f"El alta de {name} espera aprobación.")
    customer = result.data["customer"]
    return Outcome(
        text=f"Di de alta a {name}.",
        mutations=[Mutation(kind="customer", id=customer["id"], label=name)],
    )


def test_a_step_that_depends_on_a_held_one_waits_and_runs_after_the_approval(
    cast: Cast,
    conversation: Conversation,
    router: ScriptedRouter,
    technician: Any,
    handlers: dict[str, Any],
) -> None:
    handlers["create_customer"] = _create_customer_or_hold
    Agent.objects.filter(organisation=cast.org, name="customer").update(
        requires_approval_for=["customer_create"]
    )
    text = "registrá a Ana Gómez y agendale una visita"
    router.script[text] = [
        task("create_customer", 0.9, customer="Ana Gómez"),
        task("book_job", 0.9, customer="Ana Gómez"),
    ]
    first = answer(conversation, cast.operator.pk, text)
    action = PendingAction.objects.get(organisation=cast.org, tool="customer_create")
    assert not Job.objects.filter(organisation=cast.org).exists()  # the booking waits
    assert Turn.objects.get(pk=first.result.turn_id).status == Turn.Status.WAITING

    _post(cast.manager, action.pk, "approve")
    [result] = _settle(conversation)

    action.refresh_from_db()
    assert action.status == Status.EXECUTED
    [job] = Job.objects.filter(organisation=cast.org)
    assert job.customer.name == "Ana Gómez"
    assert f"#{job.pk}" in result.text


def test_a_restart_between_request_and_decision_still_resumes_from_the_checkpoint(
    cast: Cast, conversation: Conversation, held: PendingAction
) -> None:
    checkpoints.reset()  # a new process: no saver, no connection of the old one
    _post(cast.manager, held.pk, "approve")
    [result] = _settle(conversation)
    held.refresh_from_db()
    assert held.status == Status.EXECUTED
    assert result.ok and "aprobó" in result.text


def test_the_queue_renders_a_deleted_requester_and_bad_links(
    cast: Cast, held: PendingAction
) -> None:
    PendingAction.objects.filter(pk=held.pk).update(
        requested_by=None, links=[{"kind": "job", "id": "x"}, "junk", {"kind": "nope", "id": 3}]
    )
    client = Client()
    client.force_login(cast.manager)
    assert client.get("/approvals/").status_code == 200
    assert client.get(f"/approvals/{held.pk}/").status_code == 200
    assert client.get("/approvals/?state=all&page=99").status_code == 200


def test_two_managers_at_once_get_one_decision_and_one_execution(cast: Cast) -> None:
    customer = factories.make_customer(cast.org, "Claudia Bianchi")
    job = factories.make_job(cast.org, customer)
    action = PendingAction.objects.create(
        organisation=cast.org, agent="scheduling", intent="cancel_job", tool="job_cancel",
        category="execute", arguments={"job_id": job.pk}, summary="Cancelar", summary_en="Cancel",
        expires_at=timezone.now() + datetime.timedelta(hours=1),
    )  # fmt: skip
    second = factories.make_user(cast.org, "manager", username="gerente2")
    barrier = threading.Barrier(2)
    results: list[Any] = []

    def decide(user: Any) -> None:
        barrier.wait()
        results.append(
            action_decide(
                organisation_id=cast.org.pk, action_id=action.pk, actor=user, approve=True
            )
        )

    threads = [threading.Thread(target=decide, args=(user,)) for user in (cast.manager, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    claims: list[bool] = []
    start = threading.Barrier(2)

    def claim() -> None:
        start.wait()
        claims.append(execution_start(PendingAction.objects.get(pk=action.pk)))

    threads = [threading.Thread(target=claim) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(r.code for r in results) == ["already_decided", "approved"]
    assert sorted(claims) == [False, True]
    assert ApprovalEvent.objects.filter(action=action, kind="approved").count() == 1


def test_an_approval_whose_turn_failed_before_running_it_ends_failed_not_approved_forever(
    cast: Cast, conversation: Conversation, held: PendingAction
) -> None:
    _post(cast.manager, held.pk, "approve")  # approved; its decision turn never runs
    long_ago = timezone.now() - datetime.timedelta(hours=1)
    PendingAction.objects.filter(pk=held.pk).update(decided_at=long_ago)

    assert approval_tasks.fail_abandoned() == 1
    assert approval_tasks.fail_abandoned() == 0  # idempotent

    held.refresh_from_db()
    assert held.status == Status.FAILED and "never run" in held.error
    assert _job(held).status == Job.Status.SCHEDULED  # nothing ran, nothing will
    assert held.events.filter(kind=ApprovalEvent.Kind.FAILED).count() == 1
