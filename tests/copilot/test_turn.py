"""run_turn: the event order, what is stored, and every failure a user can hit."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from copilot import nodes
from copilot import turn as turn_module
from copilot.events import EVENT_TYPES
from copilot.locks import LockUnavailable
from copilot.models import AgentRun, Conversation, Message
from copilot.turn import run_turn
from tests.conftest import Cast
from tests.copilot.conftest import ScriptedRouter, task

pytestmark = [
    pytest.mark.django_db(transaction=True),  # the turn runs in a worker thread
    pytest.mark.usefixtures("registry", "handlers"),
]


class Sink:
    """A `send` that appends, and notes which thread the loop ran it on."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    async def __call__(self, event: Any) -> None:
        self.events.append(dict(event))

    def types(self) -> list[str]:
        return [event["type"] for event in self.events]


async def ask(cast: Cast, conversation: Conversation, text: str, send: Any) -> Any:
    return await run_turn(
        organisation_id=cast.org.pk,
        conversation_id=conversation.pk,
        user_id=cast.operator.pk,
        text=text,
        send=send,
    )


def stored(conversation: Conversation) -> list[tuple[str, str]]:
    return list(
        Message.objects.filter(conversation=conversation).order_by("pk").values_list("role", "text")
    )


async def test_a_turn_streams_thinking_first_and_completed_last(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    router.script["buscá a Juan"] = [task("search_customer", 0.9, customer="Juan")]
    sink = Sink()

    result = await ask(cast, conversation, "buscá a Juan", sink)

    assert sink.types() == [
        "thinking", "agent_start", "tool_start", "tool_result", "tool_end", "agent_end",
        "text", "consulted", "completed",
    ]  # fmt: skip
    assert set(sink.types()) <= EVENT_TYPES
    assert {e["turn_id"] for e in sink.events} == {result.turn_id}
    user, answer = await sync_to_async(list)(
        Message.objects.filter(conversation=conversation).order_by("pk")
    )
    assert sink.events[0]["message_id"] == user.pk and user.text == "buscá a Juan"
    completed = sink.events[-1]
    assert completed["message_id"] == answer.pk == result.assistant_message_id
    assert completed["text"] == answer.text == result.text == "Encontré 0 clientes."
    assert sink.events[-2]["agents"][0]["agent"] == "customer"
    assert answer.trace["turn_id"] == result.turn_id
    assert answer.trace["steps"][0]["intent"] == "search_customer"


async def test_the_conversation_remembers_the_job_for_the_next_turn(
    cast: Cast, conversation: Conversation, router: ScriptedRouter, technician: Any
) -> None:
    router.script["alta a Marta Díaz y agendala el lunes"] = [
        task("create_customer", 0.9, customer="Marta Díaz"),
        task("book_job", 0.9, service="service de split"),
    ]
    router.script["pasalo al viernes"] = [task("reschedule", 0.9)]

    await ask(cast, conversation, "alta a Marta Díaz y agendala el lunes", Sink())
    second = await ask(cast, conversation, "pasalo al viernes", Sink())

    await sync_to_async(conversation.refresh_from_db)()
    job_id = conversation.state["job_id"]
    assert second.text == f"Reprogramo el trabajo #{job_id}."
    assert conversation.state["customer_label"] == "Marta Díaz"
    assert conversation.state["last_intents"] == ["reschedule"]
    assert "customer: Marta Díaz" in conversation.summary
    assert "asked: pasalo al viernes [reschedule]" in conversation.summary
    assert conversation.title == "alta a Marta Díaz y agendala el lunes"


async def test_events_reach_send_while_the_turn_is_still_running(
    cast: Cast, conversation: Conversation, router: ScriptedRouter, handlers: dict[str, Any]
) -> None:
    release = threading.Event()
    seen_before_release: list[str] = []

    def slow(step: Any, runner: Any) -> Any:
        release.wait(5)
        return handlers["greeting"](step, runner)

    handlers["search_customer"] = slow
    router.script["buscá a Juan"] = [task("search_customer", 0.9)]
    sink = Sink()

    async def watch() -> None:
        while "agent_start" not in sink.types():
            await asyncio.sleep(0.005)
        seen_before_release.extend(sink.types())
        release.set()

    watcher = asyncio.create_task(watch())
    await ask(cast, conversation, "buscá a Juan", sink)
    await watcher

    assert seen_before_release == ["thinking", "agent_start"]


async def test_a_failure_sends_error_then_completed_and_keeps_the_message(
    cast: Cast, conversation: Conversation, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(organisation: Any) -> Any:
        raise RuntimeError("the classifier is gone")

    monkeypatch.setattr(nodes, "router_for", broken)
    sink = Sink()

    result = await ask(cast, conversation, "agendame a Juan el lunes", sink)

    assert sink.types() == ["thinking", "error", "completed"]
    error = sink.events[1]
    assert error["code"] == "turn_failed"
    assert error["message"].startswith("Algo falló de nuestro lado")
    assert not result.ok and result.error_code == "turn_failed"
    messages = await sync_to_async(stored)(conversation)
    assert messages == [("user", "agendame a Juan el lunes"), ("assistant", error["message"])]
    assert sink.events[-1]["message_id"] == result.assistant_message_id


async def test_the_error_is_in_the_language_of_the_message(
    cast: Cast, conversation: Conversation, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(nodes, "router_for", lambda organisation: 1 / 0)
    sink = Sink()

    await ask(cast, conversation, "please book John for Monday at 10", sink)

    assert sink.events[1]["message"].startswith("Something failed on our side")


async def test_a_conversation_of_another_organisation_is_not_found(
    cast: Cast, router: ScriptedRouter
) -> None:
    foreign = await sync_to_async(Conversation.objects.create)(organisation=cast.other_org)
    sink = Sink()

    result = await run_turn(
        organisation_id=cast.org.pk, conversation_id=foreign.pk, user_id=cast.operator.pk,
        text="hola", send=sink,
    )  # fmt: skip

    assert sink.types() == ["error", "completed"]
    assert sink.events[0]["code"] == "conversation_not_found"
    assert result.error_code == "conversation_not_found"
    assert await sync_to_async(Message.objects.filter(conversation=foreign).count)() == 0


async def test_a_closed_socket_does_not_lose_the_answer(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    router.script["buscá a Juan"] = [task("search_customer", 0.9)]
    calls: list[str] = []

    async def closed(event: Any) -> None:
        calls.append(event["type"])
        raise ConnectionError("socket closed")

    result = await ask(cast, conversation, "buscá a Juan", closed)

    assert calls == ["thinking"]  # it stopped sending after the first failure
    assert result.ok and result.text == "Encontré 0 clientes."
    assert await sync_to_async(stored)(conversation) == [
        ("user", "buscá a Juan"),
        ("assistant", "Encontré 0 clientes."),
    ]
    runs = await sync_to_async(AgentRun.objects.filter(turn_id=result.turn_id).count)()
    assert runs == 1


async def test_two_turns_of_one_conversation_run_one_after_the_other(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    router.script["buscá a Juan"] = [task("search_customer", 0.9)]
    router.script["hola"] = [task("greeting", 1.0)]
    sink = Sink()

    first, second = await asyncio.gather(
        ask(cast, conversation, "buscá a Juan", sink), ask(cast, conversation, "hola", sink)
    )

    turns = [e["turn_id"] for e in sink.events]
    boundary = turns.index(second.turn_id)
    assert set(turns[:boundary]) == {first.turn_id} and set(turns[boundary:]) == {second.turn_id}
    assert sink.events[boundary - 1]["type"] == "completed"
    assert sink.events[boundary]["type"] == "thinking"


async def test_a_conversation_busy_for_too_long_keeps_the_message_and_says_so(
    cast: Cast, conversation: Conversation, monkeypatch: pytest.MonkeyPatch
) -> None:
    @contextlib.asynccontextmanager
    async def busy(organisation_id: int, conversation_id: int) -> AsyncIterator[None]:
        raise LockUnavailable("held")
        yield

    monkeypatch.setattr(turn_module, "conversation_lock", busy)
    sink = Sink()

    result = await ask(cast, conversation, "agendame a Juan", sink)

    assert sink.types() == ["error", "completed"]
    assert sink.events[0]["code"] == "conversation_busy"
    assert await sync_to_async(stored)(conversation) == [("user", "agendame a Juan")]
    assert result.user_message_id is not None
