"""One copilot turn, end to end, as a plain async service every channel calls.

The panel's consumer awaits it with a `send` that writes to the websocket; the WhatsApp task calls
it through `async_to_sync` with a `send` that buffers. The graph and every ORM call run in one
worker thread (the ORM is sync); events cross back to the event loop through an asyncio queue fed
with `loop.call_soon_threadsafe`, so each one reaches `send` while the turn is still running.

Order (copilot/events.py): `thinking` (right after the user's message is stored, before any heavy
work), the step events and `text` chunks as they happen, then `consulted` and `completed` — or
`error` then `completed`. The user's message is stored first and is never lost.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.db import close_old_connections, transaction
from django.utils import timezone

from copilot import clarify, replies
from copilot import memory as wm
from copilot.events import (
    CompletedEvent,
    ConsultedEvent,
    ErrorEvent,
    Event,
    ThinkingEvent,
    UsageEvent,
)
from copilot.locks import LockUnavailable, conversation_lock
from copilot.models import Conversation, Message
from copilot.selectors import get_conversation_for_org
from copilot.services import conversation_state_update, message_add
from copilot.understanding.language import detect_language

logger = logging.getLogger(__name__)

Send = Callable[[Event], Awaitable[None]]
Emit = Callable[[Any], None]
_DONE = object()


@dataclass
class TurnResult:
    turn_id: str
    ok: bool
    text: str
    language: str
    user_message_id: int | None = None
    assistant_message_id: int | None = None
    error_code: str = ""
    timings: dict[str, float] = field(default_factory=dict)


class _Sender:
    """`send`, except that a closed socket stops the sending, not the turn (S4: the answer is
    stored and the client gets it on reconnect)."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.broken = False

    async def __call__(self, event: Event) -> None:
        if self.broken:
            return
        try:
            await self._send(event)
        except Exception:
            logger.warning("turn %s: send failed; the turn goes on", event.get("turn_id"))
            self.broken = True


async def run_turn(
    *,
    organisation_id: int,
    conversation_id: int,
    user_id: int | None,
    text: str,
    send: Send,
) -> TurnResult:
    """Store the message, answer it, store the answer; stream every event to `send`.

    Turns of one conversation run one at a time, in arrival order (S5, copilot/locks.py).
    """
    sender = _Sender(send)
    try:
        async with conversation_lock(organisation_id, conversation_id):
            return await _run(organisation_id, conversation_id, user_id, text, sender)
    except LockUnavailable:
        # Another turn held the conversation too long: keep the message, say so, end the turn.
        keep = sync_to_async(_keep_unanswered, thread_sensitive=False)
        result = await keep(organisation_id, conversation_id, text)
        await sender(_error(result.turn_id, result.error_code, result.text))
        await sender(_completed(result))
        return result


async def _run(
    organisation_id: int, conversation_id: int, user_id: int | None, text: str, sender: _Sender
) -> TurnResult:
    turn_id = str(uuid.uuid4())
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue()

    def emit(event: Any) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, event)

    work = sync_to_async(_work, thread_sensitive=False)
    task = asyncio.ensure_future(
        work(organisation_id, conversation_id, user_id, text, turn_id, emit)
    )
    # Runs on the loop after every event the thread scheduled, so the queue ends with _DONE.
    task.add_done_callback(lambda _task: queue.put_nowait(_DONE))
    try:
        while (event := await queue.get()) is not _DONE:
            await sender(event)
    except asyncio.CancelledError:
        # The caller went away; the thread cannot be stopped, so let it finish and store the
        # answer (S4) while this turn still holds the conversation.
        sender.broken = True
        await asyncio.wait({task})
        raise
    try:
        result = task.result()
    except Exception:  # _work reports its own failures; this is the last line of defence
        logger.exception("turn %s failed outside the graph", turn_id)
        language = detect_language(text)
        result = TurnResult(turn_id, False, replies.turn_failed(language), language,
                            error_code="internal")  # fmt: skip
        await sender(_error(turn_id, result.error_code, result.text))
    await sender(_completed(result))
    return result


def _error(turn_id: str, code: str, message: str) -> ErrorEvent:
    return ErrorEvent(type="error", turn_id=turn_id, code=code, message=message)


def _completed(result: TurnResult) -> CompletedEvent:
    return CompletedEvent(
        type="completed",
        turn_id=result.turn_id,
        message_id=result.assistant_message_id,
        text=result.text,
    )


def _keep_unanswered(organisation_id: int, conversation_id: int, text: str) -> TurnResult:
    """The conversation stayed busy: store the message anyway (it is never lost) and say so."""
    close_old_connections()
    language = detect_language(text)
    busy = replies.t(
        language,
        es="Sigo con tu mensaje anterior; guardé este, mandámelo de nuevo en un momento.",
        en="I'm still on your previous message; this one is saved, send it again in a moment.",
    )
    result = TurnResult(str(uuid.uuid4()), False, busy, language, error_code="conversation_busy")
    try:
        conversation = get_conversation_for_org(organisation_id, conversation_id)
        asked = message_add(
            conversation=conversation, role=Message.Role.USER, text=text, language=language
        )
        result.user_message_id = asked.pk
    except Conversation.DoesNotExist:
        result.error_code = "conversation_not_found"
    finally:
        close_old_connections()
    return result


def _user(user_id: int | None) -> Any:
    if user_id is None:
        return None
    return get_user_model().objects.filter(pk=user_id).first()


def _work(
    organisation_id: int,
    conversation_id: int,
    user_id: int | None,
    text: str,
    turn_id: str,
    emit: Emit,
) -> TurnResult:
    """The whole turn in one worker thread, with its own database connection."""
    close_old_connections()
    language = detect_language(text)
    try:
        try:
            conversation = get_conversation_for_org(organisation_id, conversation_id)
        except Conversation.DoesNotExist:
            message = replies.t(
                language,
                es="No encontré esa conversación.",
                en="That conversation was not found.",
            )
            emit(_error(turn_id, "conversation_not_found", message))
            return TurnResult(
                turn_id, False, message, language, error_code="conversation_not_found"
            )
        user = _user(user_id)
        with transaction.atomic():  # one commit for the message and the conversation's touch
            asked = message_add(
                conversation=conversation, role=Message.Role.USER, text=text, language=language
            )
        emit(ThinkingEvent(type="thinking", turn_id=turn_id, message_id=asked.pk))
        return _answer(conversation, user, asked, turn_id, emit)
    finally:
        close_old_connections()


def _answer(
    conversation: Conversation, user: Any, asked: Message, turn_id: str, emit: Emit
) -> TurnResult:
    from copilot.graph import run_graph  # LangGraph is imported on the first turn only
    from copilot.state import TurnDeps

    started, cpu_started = time.perf_counter(), time.thread_time()
    deps = TurnDeps(
        organisation=conversation.organisation, user=user, conversation=conversation,
        turn_id=turn_id, text=asked.text, message_id=asked.pk, now=timezone.now(), emit=emit,
    )  # fmt: skip
    try:
        state = run_graph(deps)
    except Exception as exc:
        logger.exception("turn %s failed in the graph", turn_id)
        return _fail(conversation, asked, turn_id, emit, exc)
    language = state.get("language") or asked.language or "es"
    # Wall time per node and for the graph, and the graph's CPU time in this thread (what the
    # turn costs when the machine is not busy with anything else).
    timings = {
        **state.get("timings", {}),
        "graph": (time.perf_counter() - started) * 1000,
        "graph_cpu": (time.thread_time() - cpu_started) * 1000,
    }
    trace = {**state.get("trace", {}), "turn_id": turn_id, "timings_ms": _rounded(timings)}
    with transaction.atomic():
        answer = _store_reply(conversation, state, language, trace)
        _remember(conversation, state, asked.text, deps.now)
    if state.get("llm") is not None:
        tokens_in, tokens_out = _turn_tokens(conversation, turn_id)
        emit(UsageEvent(type="usage", turn_id=turn_id, tokens_in=tokens_in, tokens_out=tokens_out))
    emit(ConsultedEvent(type="consulted", turn_id=turn_id, agents=state.get("consulted", [])))
    return TurnResult(
        turn_id, True, state["reply"], language, user_message_id=asked.pk,
        assistant_message_id=answer.pk, timings=timings,
    )  # fmt: skip


def _store_reply(
    conversation: Conversation, state: Any, language: str, trace: dict[str, Any]
) -> Message:
    """The reply as stored history. When the model's agents answered, each agent's answer is its
    own message (history stays separated per agent); the trace goes with the last one."""
    parts: list[tuple[str, str]] = state.get("parts") or []
    direct = state.get("direct_agent") or ""
    per_agent = state.get("routed_by") == "model" and len(parts) > 1
    if not per_agent:
        return message_add(
            conversation=conversation, role=Message.Role.ASSISTANT, text=state["reply"],
            language=language, agent=direct, trace=trace,
        )  # fmt: skip
    merged: list[tuple[str, str]] = []
    for agent, text in parts:
        if merged and merged[-1][0] == agent:
            merged[-1] = (agent, f"{merged[-1][1]}\n\n{text}")
        else:
            merged.append((agent, text))
    stored: Message | None = None
    for position, (agent, text) in enumerate(merged):
        last = position == len(merged) - 1
        stored = message_add(
            conversation=conversation, role=Message.Role.ASSISTANT, text=text,
            language=language, agent=agent, trace=trace if last else {"turn_id": trace["turn_id"]},
        )  # fmt: skip
    assert stored is not None
    return stored


def _turn_tokens(conversation: Conversation, turn_id: str) -> tuple[int, int]:
    from django.db.models import Sum

    from copilot.models import ModelCall

    totals = ModelCall.objects.filter(
        organisation_id=conversation.organisation_id, turn_id=turn_id
    ).aggregate(tokens_in=Sum("tokens_in"), tokens_out=Sum("tokens_out"))
    return int(totals["tokens_in"] or 0), int(totals["tokens_out"] or 0)


def _remember(
    conversation: Conversation, state: Any, user_text: str, now: datetime.datetime
) -> None:
    """The next turn's working memory: the subject under discussion, a compact summary and the
    question this turn left open (O8)."""
    runs = state.get("runs", [])
    done = [run.step for run in runs if not run.outcome.yielded]
    updated = wm.remember_turn(
        state["ctx"].state if "ctx" in state else dict(conversation.state),
        intents=[step.intent for step in done],
        agents=[step.agent for step in done],
    )
    asking = next((run for run in runs if run.outcome.clarify is not None), None)
    asked = None
    if asking is not None and asking.outcome.clarify is not None:
        step, question = asking.step, asking.outcome.clarify
        asked = (step.intent, step.agent, step.engine, step.text, question.question, question.slot)
    pending = clarify.next_pending(
        asked, state.get("pending"), resumed=bool(state.get("resumed")), now=now
    )
    updated.pop(clarify.PENDING, None)
    if pending is not None:
        updated[clarify.PENDING] = pending.as_state()
    summary = wm.summarize(updated, conversation.summary, user_text)
    conversation_state_update(conversation=conversation, state=updated, summary=summary)


def _fail(
    conversation: Conversation, asked: Message, turn_id: str, emit: Emit, exc: Exception
) -> TurnResult:
    """Say it failed, in the message's language, and keep the failure in the history."""
    language = asked.language or "es"
    text = replies.turn_failed(language)
    emit(_error(turn_id, "turn_failed", text))
    answer_id: int | None = None
    try:
        answer = message_add(
            conversation=conversation, role=Message.Role.ASSISTANT, text=text, language=language,
            trace={"turn_id": turn_id, "error": f"{type(exc).__name__}: {exc}"},
        )  # fmt: skip
        answer_id = answer.pk
    except Exception:
        logger.exception("turn %s: could not store the failure", turn_id)
    return TurnResult(
        turn_id, False, text, language, user_message_id=asked.pk,
        assistant_message_id=answer_id, error_code="turn_failed",
    )  # fmt: skip


def _rounded(timings: dict[str, float]) -> dict[str, float]:
    return {name: round(ms, 2) for name, ms in timings.items()}
