"""The turn as a job: stored first, run from its id, every event logged and published; the
runner's lease, claims, recovery of queued turns and interruption of cut-short ones."""

from __future__ import annotations

import asyncio
import datetime
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.db import connection
from django.utils import timezone

from agents.base import Outcome
from agents.events import EVENT_TYPES
from agents.models import ToolCall
from copilot import answering, eventlog, runner, services, tasks
from copilot.intake import MessageRefused, accept_message
from copilot.models import AgentRun, Conversation, ConversationEvent, Message, Turn
from copilot.orchestration import nodes
from copilot.services import conversation_create
from tests.conftest import Cast
from tests.copilot.conftest import ScriptedRouter, task
from tests.copilot.turns import answer

pytestmark = [
    pytest.mark.django_db(transaction=True),  # runners work in threads with their own connections
    pytest.mark.usefixtures("registry", "handlers"),
]


def stored(conversation: Conversation) -> list[tuple[str, str]]:
    return list(
        Message.objects.filter(conversation=conversation).order_by("pk").values_list("role", "text")
    )


def test_a_turn_streams_thinking_first_and_completed_last(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    router.script["buscá a Juan"] = [task("search_customer", 0.9, customer="Juan")]

    turn = answer(conversation, cast.operator.pk, "buscá a Juan")
    result, events = turn.result, turn.events

    # The step's start and end, and the call's start, result and end, are logged folded.
    assert turn.types() == [
        "thinking", "agent_start", "tool_result", "text", "consulted", "completed",
    ]  # fmt: skip
    step, call = events[1], events[2]
    assert step["agent"] == "customer" and step["success"] is True and step["latency_ms"] >= 0
    assert call["tool"] == "customers_find" and call["ok"] is True and call["latency_ms"] >= 0
    assert "arguments" in call
    assert set(turn.types()) <= EVENT_TYPES
    assert {e["turn_id"] for e in events} == {result.turn_id}
    user, reply = list(Message.objects.filter(conversation=conversation).order_by("pk"))
    assert events[0]["message_id"] == user.pk and user.text == "buscá a Juan"
    completed = events[-1]
    assert completed["message_id"] == reply.pk == result.assistant_message_id
    assert completed["text"] == reply.text == result.text == "Encontré 0 clientes."
    assert events[-2]["agents"][0]["agent"] == "customer"
    assert reply.trace["turn_id"] == result.turn_id


def test_the_message_is_stored_and_acknowledged_before_its_turn_runs(
    cast: Cast, conversation: Conversation
) -> None:
    accepted = accept_message(conversation=conversation, user_id=cast.operator.pk, text="hola")

    turn = Turn.objects.get(pk=accepted.turn_id)
    assert turn.status == Turn.Status.QUEUED and turn.message_id == accepted.message_id
    assert stored(conversation) == [("user", "hola")]
    assert accepted.event["type"] == "accepted" and accepted.event["seq"] == 1
    assert accepted.event["message_id"] == accepted.message_id
    logged = ConversationEvent.objects.get(conversation=conversation)
    assert (logged.seq, logged.type, logged.turn_id) == (1, "accepted", accepted.turn_id)


def test_every_event_of_a_turn_is_logged_with_consecutive_sequence_numbers(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    router.script["buscá a Juan"] = [task("search_customer", 0.9)]
    answer(conversation, cast.operator.pk, "buscá a Juan")
    answer(conversation, cast.operator.pk, "buscá a Juan")

    seqs = list(
        ConversationEvent.objects.filter(conversation=conversation).values_list("seq", flat=True)
    )
    assert seqs == list(range(1, len(seqs) + 1))
    assert Conversation.objects.get(pk=conversation.pk).event_seq == len(seqs)
    after = eventlog.events_after(conversation.pk, 5)
    assert [e["seq"] for e in after] == seqs[5:]


def test_the_same_frame_sent_twice_is_one_message(cast: Cast, conversation: Conversation) -> None:
    first = accept_message(
        conversation=conversation, user_id=cast.operator.pk, text="hola", client_id="c-1"
    )
    again = accept_message(
        conversation=conversation, user_id=cast.operator.pk, text="hola", client_id="c-1"
    )

    assert again.duplicate and not first.duplicate
    assert (again.turn_id, again.message_id) == (first.turn_id, first.message_id)
    assert again.event["seq"] == first.event["seq"]
    assert Message.objects.filter(conversation=conversation).count() == 1
    assert Turn.objects.filter(conversation=conversation).count() == 1


@pytest.mark.parametrize(("text", "code"), [("hola\x00mundo", "nul"), ("\ud800", "surrogate")])
def test_text_that_cannot_be_stored_is_refused_and_nothing_is_kept(
    cast: Cast, conversation: Conversation, text: str, code: str
) -> None:
    with pytest.raises(MessageRefused) as refused:
        accept_message(conversation=conversation, user_id=cast.operator.pk, text=text)

    assert refused.value.code == code
    assert stored(conversation) == []
    assert not ConversationEvent.objects.filter(conversation=conversation).exists()


async def test_events_reach_a_subscriber_while_the_turn_is_still_running(
    cast: Cast, conversation: Conversation, router: ScriptedRouter, handlers: dict[str, Any]
) -> None:
    release = threading.Event()

    def slow(step: Any, runner_: Any) -> Any:
        release.wait(5)
        return handlers["greeting"](step, runner_)

    handlers["search_customer"] = slow
    router.script["buscá a Juan"] = [task("search_customer", 0.9)]
    eventlog.use_loop(asyncio.get_running_loop())
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(eventlog.group_name(cast.org.pk, conversation.pk), channel)

    running = asyncio.ensure_future(
        sync_to_async(answer, thread_sensitive=False)(
            conversation, cast.operator.pk, "buscá a Juan"
        )
    )
    first = await asyncio.wait_for(layer.receive(channel), 10)
    live = await asyncio.wait_for(layer.receive(channel), 10)
    still_running = not running.done()  # the step is held until `release`
    release.set()
    await running
    rest = []
    while not rest or rest[-1]["type"] != "completed":
        rest.append((await asyncio.wait_for(layer.receive(channel), 10))["event"])

    assert first["event"]["type"] == "accepted" and "seq" in first["event"]
    # `thinking` goes out live at once, unsequenced; its logged copy comes with the step.
    assert live["event"]["type"] == "thinking" and "seq" not in live["event"] and still_running
    logged = [event for event in rest if "seq" in event]
    assert [event["type"] for event in logged][:2] == ["thinking", "agent_start"]
    assert [event["seq"] for event in logged] == list(
        range(first["event"]["seq"] + 1, first["event"]["seq"] + 1 + len(logged))
    )
    assert running.result().result.ok


def test_a_failure_sends_error_then_completed_and_keeps_the_message(
    cast: Cast, conversation: Conversation, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(organisation: Any) -> Any:
        raise RuntimeError("the classifier is gone")

    monkeypatch.setattr(nodes, "router_for", broken)

    turn = answer(conversation, cast.operator.pk, "agendame a Juan el lunes")

    assert turn.types() == ["thinking", "error", "completed"]
    error = turn.events[1]
    assert error["code"] == "turn_failed"
    assert error["message"].startswith("Algo falló de nuestro lado")
    assert not turn.result.ok and turn.result.error_code == "turn_failed"
    assert stored(conversation) == [
        ("user", "agendame a Juan el lunes"),
        ("assistant", error["message"]),
    ]
    assert turn.events[-1]["message_id"] == turn.result.assistant_message_id
    assert Turn.objects.get(pk=turn.result.turn_id).status == Turn.Status.FAILED


def test_the_error_is_in_the_language_of_the_message(
    cast: Cast, conversation: Conversation, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(nodes, "router_for", lambda organisation: 1 / 0)

    turn = answer(conversation, cast.operator.pk, "please book John for Monday at 10")

    assert turn.events[1]["message"].startswith("Something failed on our side")


def test_a_runner_for_the_wrong_organisation_finds_nothing(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    accepted = accept_message(conversation=conversation, user_id=cast.operator.pk, text="hola")

    drained = runner.drain(cast.other_org.pk, conversation.pk)

    assert drained.results == [] and drained.retry_in is None
    assert Turn.objects.get(pk=accepted.turn_id).status == Turn.Status.QUEUED


def test_an_answer_with_nobody_listening_is_stored_and_logged(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    router.script["buscá a Juan"] = [task("search_customer", 0.9)]

    turn = answer(conversation, cast.operator.pk, "buscá a Juan")

    assert turn.result.ok and turn.result.text == "Encontré 0 clientes."
    assert stored(conversation) == [("user", "buscá a Juan"), ("assistant", "Encontré 0 clientes.")]
    assert AgentRun.objects.filter(turn_id=turn.result.turn_id).count() == 1
    assert turn.types()[-1] == "completed"


def test_queued_turns_run_in_arrival_order_one_at_a_time(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    router.script["buscá a Juan"] = [task("search_customer", 0.9)]
    router.script["hola"] = [task("greeting", 1.0)]
    first = accept_message(conversation=conversation, user_id=cast.operator.pk, text="buscá a Juan")
    second = accept_message(conversation=conversation, user_id=cast.operator.pk, text="hola")

    with ThreadPoolExecutor(max_workers=3) as pool:
        drains = list(pool.map(lambda _: runner.drain(cast.org.pk, conversation.pk), range(3)))

    assert sorted(len(d.results) for d in drains)[-1] >= 1
    assert sum(len(d.results) for d in drains) == 2  # each turn ran exactly once
    logged = [
        (e["turn_id"], e["type"])
        for e in eventlog.events_after(conversation.pk, 0)
        if e["type"] != "accepted"
    ]
    boundary = [turn for turn, _ in logged].index(second.turn_id)
    assert {turn for turn, _ in logged[:boundary]} == {first.turn_id}
    assert {turn for turn, _ in logged[boundary:]} == {second.turn_id}
    assert logged[boundary - 1][1] == "completed" and logged[boundary][1] == "thinking"


def test_a_runner_that_finds_the_lease_taken_says_when_to_come_back(
    cast: Cast, conversation: Conversation
) -> None:
    until = timezone.now() + datetime.timedelta(seconds=3)
    Conversation.objects.filter(pk=conversation.pk).update(lease_owner="someone", lease_until=until)
    accept_message(conversation=conversation, user_id=cast.operator.pk, text="hola")

    drained = runner.drain(cast.org.pk, conversation.pk)

    assert drained.results == []
    assert drained.retry_in is not None and 2.5 < drained.retry_in < 4
    assert Turn.objects.get(conversation=conversation).status == Turn.Status.QUEUED


def test_a_dead_runners_lease_lapses_within_seconds_and_its_queue_runs(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    router.script["hola"] = [task("greeting", 1.0)]
    lapsed = timezone.now() - datetime.timedelta(milliseconds=1)
    Conversation.objects.filter(pk=conversation.pk).update(lease_owner="dead", lease_until=lapsed)
    accept_message(conversation=conversation, user_id=cast.operator.pk, text="hola")

    drained = runner.drain(cast.org.pk, conversation.pk)

    assert [r.text for r in drained.results] == ["¡Hola! ¿En qué te ayudo?"]
    released = Conversation.objects.get(pk=conversation.pk)
    assert (released.lease_owner, released.lease_until) == ("", None)


def test_a_message_survives_the_death_of_its_process_between_ack_and_turn(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    router.script["hola"] = [task("greeting", 1.0)]
    # Acknowledged, then the process died before any runner took it.
    accepted = accept_message(conversation=conversation, user_id=cast.operator.pk, text="hola")
    Turn.objects.filter(pk=accepted.turn_id).update(
        created_at=timezone.now() - datetime.timedelta(minutes=1)
    )

    assert runner.stale_conversations() == [(cast.org.pk, conversation.pk)]
    tasks._recover_now()

    turn = Turn.objects.get(pk=accepted.turn_id)
    assert turn.status == Turn.Status.DONE
    assert stored(conversation) == [("user", "hola"), ("assistant", "¡Hola! ¿En qué te ayudo?")]
    assert runner.stale_conversations() == []


def test_a_restart_quicker_than_a_lease_still_recovers_the_dead_runs_turns(
    cast: Cast,
    conversation: Conversation,
    router: ScriptedRouter,
    handlers: dict[str, Any],
    settings: Any,
) -> None:
    router.script["hola"] = [task("greeting", 1.0)]
    settings.COPILOT_LEASE_SECONDS = 0.5
    # Another conversation's queued turn, slower than the lease: recovery is still busy with it
    # when the dead run's lease lapses.
    router.script["lento"] = [task("complaint", 1.0)]

    def slow(step: Any, run: Any) -> Outcome:
        time.sleep(0.8)
        return Outcome(text="Anotado.")

    handlers["complaint"] = slow
    other = conversation_create(organisation=cast.org, user=cast.operator)
    accept_message(conversation=other, user_id=cast.operator.pk, text="lento")
    cut = accept_message(conversation=conversation, user_id=cast.operator.pk, text="hola")
    waiting = accept_message(conversation=conversation, user_id=cast.operator.pk, text="hola")
    # The previous run of this process died mid-turn a moment ago: its lease has not lapsed.
    Turn.objects.filter(pk=cut.turn_id).update(status=Turn.Status.RUNNING)
    held = timezone.now() + datetime.timedelta(seconds=0.5)
    Conversation.objects.filter(pk=conversation.pk).update(lease_owner="dead", lease_until=held)

    tasks._recover_now()  # what the first socket of the new process starts
    assert Turn.objects.get(pk=cut.turn_id).status == Turn.Status.RUNNING  # still leased

    deadline = time.monotonic() + 10
    while (
        time.monotonic() < deadline
        and Turn.objects.filter(
            conversation=conversation, status__in=(Turn.Status.QUEUED, Turn.Status.RUNNING)
        ).exists()
    ):
        time.sleep(0.05)
    assert Turn.objects.get(pk=cut.turn_id).status == Turn.Status.INTERRUPTED
    assert Turn.objects.get(pk=waiting.turn_id).status == Turn.Status.DONE
    assert [role for role, _ in stored(conversation)] == ["user", "user", "assistant", "assistant"]


def test_a_turn_cut_short_is_interrupted_not_rerun_and_says_what_was_done(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    router.script["hola"] = [task("greeting", 1.0)]
    cut = accept_message(
        conversation=conversation, user_id=cast.operator.pk,
        text="dale de alta a Marta Díaz y agendale un service",
    )  # fmt: skip
    after = accept_message(conversation=conversation, user_id=cast.operator.pk, text="hola")
    # Its runner claimed it, registered the customer, and died before booking.
    Turn.objects.filter(pk=cut.turn_id).update(
        status=Turn.Status.RUNNING,
        plan=[
            {"agent": "customer", "intent": "create_customer", "text": "alta"},
            {"agent": "scheduling", "intent": "book_job", "text": "agendale"},
        ],
    )
    ToolCall.objects.create(
        organisation=cast.org, conversation_id=conversation.pk, turn_id=cut.turn_id,
        agent="customer", intent="create_customer", tool="customer_create", category="suggest",
        summary="customer #54 created",
    )  # fmt: skip
    AgentRun.objects.create(
        organisation=cast.org, conversation=conversation, turn_id=cut.turn_id, agent="customer",
        intent="create_customer",
    )  # fmt: skip
    lapsed = timezone.now() - datetime.timedelta(seconds=1)
    Conversation.objects.filter(pk=conversation.pk).update(lease_owner="dead", lease_until=lapsed)

    drained = runner.drain(cast.org.pk, conversation.pk)

    assert drained.interrupted == 1
    assert [r.turn_id for r in drained.results] == [after.turn_id]  # the next one ran
    interrupted = Turn.objects.get(pk=cut.turn_id)
    assert interrupted.status == Turn.Status.INTERRUPTED
    text = interrupted.answer.text
    assert "customer #54 created" in text and "agendar el trabajo" in text
    assert "dar de alta" not in text  # done, so not listed as missing
    events = [e for e in eventlog.events_after(conversation.pk, 0) if e["turn_id"] == cut.turn_id]
    assert [e["type"] for e in events] == ["accepted", "error", "completed"]
    assert events[1]["code"] == "interrupted" and events[2]["text"] == text
    assert AgentRun.objects.filter(turn_id=cut.turn_id).count() == 1  # nothing ran again


def test_without_a_reachable_queue_the_turn_stays_queued_and_recovery_hands_it_over(
    cast: Cast,
    conversation: Conversation,
    router: ScriptedRouter,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    router.script["hola"] = [task("greeting", 1.0)]
    settings.COPILOT_TURN_RUNNER = "celery"

    def broker_down(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(tasks.drain_conversation, "apply_async", broker_down)
    accepted = accept_message(conversation=conversation, user_id=cast.operator.pk, text="hola")

    assert tasks.dispatch(cast.org.pk, conversation.pk) is False
    assert Turn.objects.get(pk=accepted.turn_id).status == Turn.Status.QUEUED

    monkeypatch.undo()  # the broker is back
    settings.COPILOT_TURN_RUNNER = "celery"
    Turn.objects.filter(pk=accepted.turn_id).update(
        created_at=timezone.now() - datetime.timedelta(minutes=1)
    )
    with _eager():
        assert tasks.recover_turns() == 1
    assert Turn.objects.get(pk=accepted.turn_id).status == Turn.Status.DONE


class _eager:
    """Celery tasks run inline, as `CELERY_TASK_ALWAYS_EAGER` makes them."""

    def __enter__(self) -> None:
        from capataz.celery import app

        self._was = app.conf.task_always_eager
        app.conf.task_always_eager = True

    def __exit__(self, *exc: object) -> None:
        from capataz.celery import app

        app.conf.task_always_eager = self._was


def test_the_lease_is_scoped_to_the_conversations_organisation(
    cast: Cast, conversation: Conversation
) -> None:
    token = "runner-x"
    assert not runner._acquire(cast.other_org.pk, conversation.pk, token)
    assert runner._acquire(cast.org.pk, conversation.pk, token)
    assert not runner._acquire(cast.org.pk, conversation.pk, "runner-y")
    assert runner._release_if_idle(conversation.pk, token)
    assert runner._acquire(cast.org.pk, conversation.pk, "runner-y")
    connection.close()


@pytest.fixture
def renewals(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The conversations whose lease the heartbeat renewed, in order."""
    renewed: list[int] = []
    real_renew = runner._renew

    def counted(conversation_id: int, token: str) -> bool:
        renewed.append(conversation_id)
        return real_renew(conversation_id, token)

    monkeypatch.setattr(runner, "_renew", counted)
    return renewed


def test_the_heartbeat_renews_a_lease_held_past_a_third_and_never_a_short_one(
    cast: Cast, conversation: Conversation, settings: Any, renewals: list[int]
) -> None:
    settings.COPILOT_LEASE_SECONDS = 0.6
    try:
        assert runner._acquire(cast.org.pk, conversation.pk, "short") == runner._FREE
        with runner.HEARTBEAT.holding(conversation.pk, "short"):
            pass  # a turn quicker than a third of the lease
        assert runner._release_if_idle(conversation.pk, "short")
        time.sleep(0.4)
        assert renewals == []

        assert runner._acquire(cast.org.pk, conversation.pk, "long") == runner._FREE
        taken = Conversation.objects.get(pk=conversation.pk).lease_until
        with runner.HEARTBEAT.holding(conversation.pk, "long"):
            time.sleep(0.9)  # a turn longer than the lease itself
            held = Conversation.objects.get(pk=conversation.pk)
        assert len(renewals) >= 2
        assert held.lease_owner == "long" and held.lease_until > taken
        assert held.lease_until > timezone.now()  # never lapsed while it worked
    finally:
        assert runner._release_if_idle(conversation.pk, "long")


def test_a_lease_taken_while_the_heartbeat_naps_on_a_longer_one_is_still_renewed_in_time(
    cast: Cast, conversation: Conversation, settings: Any, renewals: list[int]
) -> None:
    """The heartbeat thread of an earlier, long lease sleeps a third of it; a lease taken
    meanwhile wakes it instead of waiting out that nap (CI saw no renewal in 0.9 s)."""
    try:
        settings.COPILOT_LEASE_SECONDS = 30
        with runner.HEARTBEAT.holding(conversation.pk, "napping"):
            time.sleep(0.1)  # the thread is up and naps ten seconds
        settings.COPILOT_LEASE_SECONDS = 0.6
        assert runner._acquire(cast.org.pk, conversation.pk, "quick") == runner._FREE
        with runner.HEARTBEAT.holding(conversation.pk, "quick"):
            time.sleep(0.9)
        assert len(renewals) >= 2
        assert renewals == [conversation.pk] * len(renewals)
    finally:
        assert runner._release_if_idle(conversation.pk, "quick")


def test_the_turns_closing_transaction_gives_the_lease_back_and_a_rolled_back_one_does_not(
    cast: Cast, conversation: Conversation, router: ScriptedRouter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    router.script["hola"] = [task("greeting", 1.0)]
    accept_message(conversation=conversation, user_id=cast.operator.pk, text="hola")
    seen: list[str] = []
    real_finish = services.turn_finish

    def finish(**kwargs: Any) -> None:
        real_finish(**kwargs)
        held = Conversation.objects.get(pk=conversation.pk)
        seen.append(held.lease_owner)  # inside the closing transaction, after the release
        if kwargs["status"] == Turn.Status.DONE:
            raise RuntimeError("the closing fails after the lease was given back")

    monkeypatch.setattr(answering, "turn_finish", finish)
    monkeypatch.setattr(services, "turn_finish", finish)
    [result] = runner.drain(cast.org.pk, conversation.pk).results

    # The answer's transaction released the lease and rolled back; the failure's released it
    # again, for good: the runner gave it back once, and nothing waits for a lapse.
    assert not result.ok and seen == ["", ""]
    held = Conversation.objects.get(pk=conversation.pk)
    assert held.lease_owner == "" and held.lease_until is None
    assert Turn.objects.get(message__text="hola").status == Turn.Status.FAILED


def test_a_lease_given_back_at_the_close_is_no_longer_renewed_by_the_heartbeat(
    cast: Cast, conversation: Conversation, router: ScriptedRouter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    router.script["hola"] = [task("greeting", 1.0)]
    accept_message(conversation=conversation, user_id=cast.operator.pk, text="hola")
    held_after: list[set[tuple[int, str]]] = []
    real_run_turn = runner.run_turn

    def run_turn(turn: Turn) -> Any:
        result = real_run_turn(turn)  # the closing committed; the runner is still `holding`
        held_after.append(set(runner.HEARTBEAT._held))
        return result

    monkeypatch.setattr(runner, "run_turn", run_turn)
    [result] = runner.drain(cast.org.pk, conversation.pk).results
    assert result.ok
    assert held_after == [set()]  # nothing left for the heartbeat to renew (and warn about)


def test_a_runner_that_crashes_lets_its_lease_lapse_and_the_next_one_interrupts_its_turn(
    cast: Cast, conversation: Conversation, router: ScriptedRouter, settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    settings.COPILOT_LEASE_SECONDS = 0.3
    router.script["hola"] = [task("greeting", 1.0)]
    accept_message(conversation=conversation, user_id=cast.operator.pk, text="hola")

    def broken(turn: Turn) -> None:
        raise ConnectionError("the database went away mid-turn")

    monkeypatch.setattr(runner, "run_turn", broken)
    with pytest.raises(ConnectionError):
        runner.drain(cast.org.pk, conversation.pk)
    left = Conversation.objects.get(pk=conversation.pk)
    assert left.lease_owner != ""  # not given back: nothing may look free while a turn runs
    assert Turn.objects.get(conversation=conversation).status == Turn.Status.RUNNING

    monkeypatch.undo()
    time.sleep(0.35)
    assert (cast.org.pk, conversation.pk) in runner.stale_conversations(queued_for=0)
    drained = runner.drain(cast.org.pk, conversation.pk)

    assert drained.interrupted == 1
    assert Turn.objects.get(conversation=conversation).status == Turn.Status.INTERRUPTED
    released = Conversation.objects.get(pk=conversation.pk)
    assert (released.lease_owner, released.lease_until) == ("", None)


def test_a_free_lease_is_taken_in_one_statement_and_skips_the_orphan_scan(
    cast: Cast, conversation: Conversation, django_assert_num_queries: Any
) -> None:
    with django_assert_num_queries(1):
        assert runner._acquire(cast.org.pk, conversation.pk, "mine") == runner._FREE
    assert runner._release_if_idle(conversation.pk, "mine")
    lapsed = timezone.now() - datetime.timedelta(seconds=1)
    Conversation.objects.filter(pk=conversation.pk).update(lease_owner="dead", lease_until=lapsed)
    assert runner._acquire(cast.org.pk, conversation.pk, "mine") == runner._TAKEN_OVER
    assert runner._acquire(cast.org.pk, conversation.pk, "yours") is None


def test_a_message_queued_while_the_runner_works_is_claimed_by_it_before_it_lets_go(
    cast: Cast, conversation: Conversation, router: ScriptedRouter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    router.script["hola"] = [task("greeting", 1.0)]
    router.script["buscá a Juan"] = [task("search_customer", 0.9)]
    accept_message(conversation=conversation, user_id=cast.operator.pk, text="hola")
    real_run_turn, later = runner.run_turn, []

    def arriving_meanwhile(turn: Turn) -> Any:
        if not later:  # someone sends a message while the first turn runs (and finds it leased)
            later.append(
                accept_message(
                    conversation=conversation, user_id=cast.operator.pk, text="buscá a Juan"
                )
            )
            assert runner.drain(cast.org.pk, conversation.pk).results == []
        return real_run_turn(turn)

    monkeypatch.setattr(runner, "run_turn", arriving_meanwhile)
    drained = runner.drain(cast.org.pk, conversation.pk)

    assert [r.turn_id for r in drained.results][1:] == [later[0].turn_id]
    assert set(Turn.objects.filter(conversation=conversation).values_list("status", flat=True)) == {
        Turn.Status.DONE
    }
    released = Conversation.objects.get(pk=conversation.pk)
    assert (released.lease_owner, released.lease_until) == ("", None)


def test_a_turns_reads_are_stored_with_its_step_and_a_failed_turn_keeps_its_own(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    from copilot.answering import answer_turn, emitter

    router.script["buscá a Juan"] = [task("search_customer", 0.9, customer="Juan")]
    done = answer(conversation, cast.operator.pk, "buscá a Juan").result
    [read] = ToolCall.objects.filter(organisation=cast.org, turn_id=done.turn_id)
    assert (read.tool, read.category, read.ok) == ("customers_find", "safe", True)

    # A producer that reads outside any step and then breaks: no step closed to write the read.
    accepted = accept_message(conversation=conversation, user_id=cast.operator.pk, text="otra")
    turn = Turn.objects.select_related("conversation__organisation", "message").get(
        pk=accepted.turn_id
    )

    def reads_then_breaks(run: Any) -> Any:
        assert run.ctx.calls.keeps  # a turn's context keeps its reads for a commit point
        run.ctx.calls.record(
            ToolCall(
                organisation=cast.org, conversation_id=conversation.pk, turn_id=run.ctx.turn_id,
                agent="customer", tool="customers_find", category="safe", arguments={}, ok=True,
            ),
            kept=True,
        )  # fmt: skip
        raise RuntimeError("broke after reading")

    failed = answer_turn(turn, emitter(turn), reads_then_breaks)

    assert failed.error_code == "turn_failed"
    assert ToolCall.objects.filter(organisation=cast.org, turn_id=accepted.turn_id).count() == 1
    assert not ToolCall.objects.filter(organisation=cast.other_org).exists()
