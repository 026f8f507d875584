"""One skeleton for every kind of turn: open the run, let the kind produce its reply, store it,
finish the turn and log its closing events in one transaction — or store and say the failure.

A kind of turn (copilot/kinds.py, a channel's own step) supplies only its producer."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from django.db import transaction
from django.utils import timezone

from agents.abtest import apply_arms
from agents.cache import turn_agents
from agents.context import CallLog, TurnContext
from agents.events import (
    CompletedEvent,
    ConsultedEvent,
    ErrorEvent,
    ThinkingEvent,
    UsageEvent,
)
from copilot.answers import Steps, steps_for_turn, steps_of
from copilot.channels import channel_of
from copilot.ledger import hold_rows
from copilot.models import Conversation, Message, Turn
from copilot.orchestration import engines, replies
from copilot.orchestration.state import TurnRun
from copilot.orchestration.streaming import TextStream
from copilot.services import (
    message_add,
    turn_finish,
)
from copilot.turnlog import TurnLog
from llm.selectors import turn_usage

logger = logging.getLogger(__name__)


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


@dataclass
class Produced:
    """What a kind of turn produced: the reply and its trace, whether an action waits for a
    manager, the agents consulted. `store` replaces storing the reply as one message; `after`
    runs in the same transaction once the reply is stored."""

    reply: str
    trace: dict[str, Any] = field(default_factory=dict)
    held: bool = False
    consulted: list[Any] = field(default_factory=list)
    steps: bool = False  # the "what I did" block (from the turn's events) goes in the trace
    language: str = ""  # the reply's language, when the producer read it
    timings: dict[str, float] = field(default_factory=dict)
    first: frozenset[str] | None = None  # the registry's chain openers, when the producer read them
    store: Callable[[dict[str, Any]], Message] | None = None
    after: Callable[[], None] | None = None


def answer_turn(
    turn: Turn, emit: Any, produce: Callable[[TurnRun | None], Produced], *,
    language: str = "", text: str | None = None, opens_run: bool = True, atomic: bool = True,
    on_failure: Callable[[Exception], None] | None = None,
) -> TurnResult:  # fmt: skip
    """Every kind of turn: the run opened, the kind's producer, the reply stored, the turn
    finished and its closing events logged in one transaction — or the failure stored and said.
    `atomic`: the producer runs inside that transaction (a call that must roll back with the
    reply); a producer that checkpoints or pauses the graph runs before it."""
    turn_id, asked, conversation = str(turn.pk), turn.message, turn.conversation
    run: TurnRun | None = None
    try:
        run = open_run(turn, emit, text) if opens_run else None
        with transaction.atomic() if atomic else contextlib.nullcontext():
            done = produce(run)
        with transaction.atomic():
            if run is not None:  # reads not yet written at a step's close (none ran, say)
                run.ctx.calls.write()
                hold_rows(turn, _written(run))  # the seal takes them from here
            trace = {**done.trace, "turn_id": turn_id}
            if done.steps:
                trace["did"] = _steps(emit, conversation.pk, turn_id, done.first)
            language = done.language or language or asked.language or "es"
            answer = (done.store or _one_message(conversation, done.reply, language))(trace)
            if done.after is not None:
                done.after()
            status = Turn.Status.WAITING if done.held else Turn.Status.DONE
            turn_finish(turn=turn, status=status, answer=answer)
            _finish_events(run, emit, turn_id, answer.pk, done.reply, done.consulted)
    except Exception as exc:
        logger.exception("turn %s failed", turn_id)
        _keep_reads(run)
        if on_failure is not None:
            on_failure(exc)
        return fail_turn(turn, emit, exc)
    return TurnResult(
        turn_id, True, done.reply, language, user_message_id=asked.pk,
        assistant_message_id=answer.pk, timings=done.timings,
    )  # fmt: skip


def _written(run: TurnRun) -> dict[str, list[Any] | None]:
    """The rows the turn's run recorded, by table, for its seal: every step's `AgentRun` and
    every tool call go through it; no model call without a model client, no approval row
    unless a call was held (then the seal reads those tables)."""
    return {
        "agent_runs": list(run.recorded),
        "tool_calls": list(run.ctx.calls.rows),
        "model_calls": [] if run.llm is None else None,
        "approvals_requested": [] if not run.ctx.calls.held else None,
    }


def _keep_reads(run: TurnRun | None) -> None:
    """A failed turn still leaves the rows of the reads it made (best effort)."""
    if run is None:
        return
    try:
        with transaction.atomic():
            run.ctx.calls.write()
    except Exception:
        logger.exception("turn %s: could not store its reads", run.ctx.turn_id)


def _one_message(
    conversation: Conversation, reply: str, language: str
) -> Callable[[dict[str, Any]], Message]:
    def store(trace: dict[str, Any]) -> Message:
        return message_add(
            conversation=conversation, role=Message.Role.ASSISTANT, text=reply,
            language=language, trace=trace,
        )  # fmt: skip

    return store


def _finish_events(
    run: TurnRun | None, emit: Any, turn_id: str, answer_id: int, reply: str,
    consulted: list[Any],
) -> None:  # fmt: skip
    """`usage`, `consulted`, `completed`: logged with the reply they close (one commit), so a
    page rendered after the commit replays nothing of a finished turn."""
    if run is not None and run.llm is not None:
        tokens_in, tokens_out = _turn_tokens(run.ctx.organisation.pk, turn_id)
        emit(UsageEvent(type="usage", turn_id=turn_id, tokens_in=tokens_in, tokens_out=tokens_out))
    emit(ConsultedEvent(type="consulted", turn_id=turn_id, agents=consulted))
    emit(completed_event(turn_id, answer_id, reply))


def _steps(emit: Any, conversation_id: int, turn_id: str, first: frozenset[str] | None) -> Steps:
    """The turn's "what I did" from the events it holds (no re-read of what it just logged)."""
    if isinstance(emit, TurnLog):
        return steps_of(emit.events(), emit.organisation_id, first)
    return steps_for_turn(conversation_id, turn_id, first)


def emitter(turn: Turn) -> TurnLog:
    """The turn's event sink: one buffered log per turn (copilot/turnlog.py), kept on the turn
    so that every part of it, and the runner once it ends, share it."""
    log = turn.__dict__.get("_event_log")
    if log is None:
        log = turn.__dict__["_event_log"] = TurnLog(turn.organisation_id, turn.conversation_id)
    return cast(TurnLog, log)


def thinking(turn: Turn) -> Any:
    emit = emitter(turn)
    emit(ThinkingEvent(type="thinking", turn_id=str(turn.pk), message_id=turn.message_id))
    return emit


def open_run(turn: Turn, emit: Any, text: str | None = None) -> TurnRun:
    """The turn's context, its engine and model client, and the enabled agents. A customer's
    own conversation (a channel's) pins the turn to that customer's records."""
    conversation = turn.conversation
    customer_id = channel_of(conversation).customer_of(conversation)
    ctx = TurnContext(
        organisation=conversation.organisation, user=turn.user, conversation_id=conversation.pk,
        now=timezone.now(), turn_id=str(turn.pk), message_id=turn.message_id,
        text=turn.message.text if text is None else text, emit=emit, customer_id=customer_id,
        calls=CallLog(keeps=True),
    )  # fmt: skip
    engine, client = engines.open_for(ctx)
    # The enabled agents with their intents and the running A/B tests, kept between turns.
    enabled, running = turn_agents(conversation.organisation)
    ticked = (turn.message.trace or {}).get("consult") if turn.message.trace else None
    # A/B tests (V4): a running test's agent runs with this conversation's arm configuration.
    tested = apply_arms(conversation.organisation, conversation.pk, enabled, running)
    return TurnRun(
        ctx=ctx, engine=engine, llm=client, stream=TextStream(emit, ctx.turn_id),
        agents=tested.agents,
        consult=tuple(str(name) for name in ticked) if isinstance(ticked, list) else (),
        arms=tested.arms, arm_intents=tested.intents, conversation=conversation,
    )  # fmt: skip


def fail_turn(turn: Turn, emit: Any, exc: Exception) -> TurnResult:
    """Say it failed, in the message's language, and keep the failure in the history."""
    turn_id, asked = str(turn.pk), turn.message
    language = asked.language or "es"
    text = replies.turn_failed(language)
    error = f"{type(exc).__name__}: {exc}"
    answer_id: int | None = None
    try:
        emit(error_event(turn_id, "turn_failed", text))
        with transaction.atomic():  # the failure and its closing events commit together
            answer = message_add(
                conversation=turn.conversation, role=Message.Role.ASSISTANT, text=text,
                language=language, trace={"turn_id": turn_id, "error": error},
            )  # fmt: skip
            turn_finish(turn=turn, status=Turn.Status.FAILED, answer=answer, error=error)
            emit(completed_event(turn_id, answer.pk, text))
        answer_id = answer.pk
    except Exception:
        logger.exception("turn %s: could not store the failure", turn_id)
    return TurnResult(
        turn_id, False, text, language, user_message_id=asked.pk,
        assistant_message_id=answer_id, error_code="turn_failed",
    )  # fmt: skip


def completed_event(turn_id: str, message_id: int | None, text: str) -> CompletedEvent:
    return CompletedEvent(type="completed", turn_id=turn_id, message_id=message_id, text=text)


def error_event(turn_id: str, code: str, message: str) -> ErrorEvent:
    return ErrorEvent(type="error", turn_id=turn_id, code=code, message=message)


def _turn_tokens(organisation_id: int, turn_id: str) -> tuple[int, int]:
    usage = turn_usage(organisation_id, turn_id)
    return usage.tokens_in, usage.tokens_out


def rounded(timings: dict[str, float]) -> dict[str, float]:
    return {name: round(ms, 2) for name, ms in timings.items()}
