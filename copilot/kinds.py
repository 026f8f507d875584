"""The kinds of turn and what each produces (copilot/answering.py runs them all the same way):
the graph's answer to a message, a manager's decision resuming a paused turn, an accepted
suggestion, an answer's undo, a decision ordered in the chat, and a turn left to a person."""

from __future__ import annotations

import datetime
import logging
import time
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext_lazy as _

from agents.models import Suggestion
from agents.proactive.services import suggestion_settle
from approvals.models import PendingAction
from common.wording import say
from copilot import memory_tasks, panel, profiles
from copilot.answering import (
    Produced,
    TurnResult,
    answer_turn,
    completed_event,
    emitter,
    rounded,
    thinking,
)
from copilot.channels import channel_of
from copilot.decisions import answer_order
from copilot.models import Conversation, Message, Turn
from copilot.orchestration import checkpoints, clarify, direct_line
from copilot.orchestration import memory as wm
from copilot.orchestration.graph import pause, resume, run_graph
from copilot.orchestration.resume import run_decision_alone
from copilot.orchestration.state import Followup, SuggestionPayload, TurnRun, TurnState, UndoPayload
from copilot.proposals import run_proposal
from copilot.services import (
    conversation_state_update,
    message_add,
    turn_finish,
)
from nlu.decisions import DecisionOrder
from nlu.language import detect_language
from nlu.values import ending

logger = logging.getLogger(__name__)


def left_to_a_person(turn: Turn) -> TurnResult:
    """The copilot does not answer a conversation a person handles: the turn ends unanswered."""
    language = turn.message.language or "es"
    # Shown in the panel only (no message: nothing goes to the customer); it closes the turn
    # for every open page.
    note = say(language, _("The copilot does not answer: a person handles this conversation."))
    with transaction.atomic():
        turn_finish(turn=turn, status=Turn.Status.DONE, error="left to a person (human mode)")
        emitter(turn)(completed_event(str(turn.pk), None, note))
    return TurnResult(str(turn.pk), True, "", language, user_message_id=turn.message_id)


def answer_with_graph(
    turn: Turn, emit: Any, text: str | None = None, opening: str = ""
) -> TurnResult:
    """The graph's answer to the turn's message (or to `text`, a registered customer's first
    request), stored and published; `opening` goes before it."""
    return answer_turn(
        turn, emit, lambda run: _graph_answer(turn, run, opening), text=text, atomic=False
    )


def _graph_answer(turn: Turn, run: TurnRun | None, opening: str) -> Produced:
    assert run is not None
    asked, conversation = turn.message, turn.conversation
    started, cpu_started = time.perf_counter(), time.thread_time()
    state = run_graph(run)
    channel = channel_of(conversation)
    extra = channel.reply_for_reader(run, state, asked)  # a customer reads it: their view
    if opening:
        state["reply"] = f"{opening}\n\n{state['reply']}"
        state["parts"] = []
    language = state["reading"].language or asked.language or "es"
    # Wall time per node and for the graph, and the graph's CPU time in this thread (what the
    # turn costs when the machine is not busy with anything else).
    timings = {
        **state.get("timings", {}),
        "graph": (time.perf_counter() - started) * 1000,
        "graph_cpu": (time.thread_time() - cpu_started) * 1000,
    }
    held = bool(state["delegation"].held)
    if held:  # it waits for a manager: checkpointed before anyone can decide
        pause(run, state)

    def store(trace: dict[str, Any]) -> Message:
        answer = _store_reply(conversation, state, language, trace)
        return channel.reply_stored(conversation, answer, extra)  # documents after it

    def after() -> None:
        summary = _remember(conversation, state, asked, run.ctx.now)
        if run.llm is not None and settings.COPILOT_MODEL_SUMMARY:  # the model's gist, later
            memory_tasks.summarize_after_commit(
                conversation.organisation_id, conversation.pk, summary
            )
        _learn(conversation, state, asked)

    return Produced(
        state["reply"], {**state.get("trace", {}), "timings_ms": rounded(timings)}, held=held,
        consulted=state.get("consulted", []), steps=True, language=language, timings=timings,
        first=frozenset(name for name, spec in state["reading"].specs.items() if spec.first),
        store=store, after=after,
    )  # fmt: skip


def _store_reply(
    conversation: Conversation, state: TurnState, language: str, trace: dict[str, Any]
) -> Message:
    """The reply as stored history. When the model's agents answered, each agent's answer is its
    own message (history stays separated per agent); the trace goes with the last one. The
    conversation row is touched once, by `_remember` after it, in the same transaction."""
    parts: list[tuple[str, str]] = state.get("parts") or []
    direct = state["reading"].direct_agent
    # The model's agents, and a direct line's verbatim block with the copilot's notes after it
    # (guarded), are stored one message per speaker.
    per_agent = (state["reading"].routed_by == "model" or bool(direct)) and len(parts) > 1
    if not per_agent:
        return message_add(
            conversation=conversation, role=Message.Role.ASSISTANT, text=state["reply"],
            language=language, agent=direct, trace=trace, touch=False,
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
            touch=False,
        )  # fmt: skip
    assert stored is not None
    return stored


def _remember(
    conversation: Conversation, state: TurnState, message: Message, now: datetime.datetime
) -> str:
    """The next turn's working memory: the subject under discussion, a compact summary (returned)
    and the question this turn left open (O8)."""
    delegation, reading = state["delegation"], state["reading"]
    runs = delegation.runs
    done = [run.step for run in runs if not run.outcome.yielded]
    updated = wm.remember_turn(
        delegation.chain.state,
        intents=[step.intent for step in done],
        agents=[step.agent for step in done],
        done=[
            (run.step.intent, mutation)
            for run in runs
            if not run.outcome.yielded
            for mutation in run.outcome.mutations
        ],
        message_id=message.pk,
        held=delegation.held,
        writes={name for name, spec in reading.specs.items() if spec.writes},
    )
    asking = next((run for run in runs if run.outcome.clarify is not None), None)
    asked = None
    if asking is not None and asking.outcome.clarify is not None:
        step, question = asking.step, asking.outcome.clarify
        asked = (step.intent, step.agent, step.engine, step.text, question.question, question.slot)
    then = tuple(
        clarify.Later(step.intent, step.agent, step.engine, step.text)
        for step in delegation.deferred
    )
    pending = clarify.next_pending(
        asked, reading.pending, resumed=reading.resumed, now=now, then=then
    )
    updated.pop(clarify.PENDING, None)
    if pending is not None:
        updated[clarify.PENDING] = pending.as_state()
    updated = direct_line.remembered(updated, reading.direct_line)
    waiting = _waiting(conversation, updated.get(wm.HELD, []))
    summary = wm.summarize(updated, conversation.summary, message.text, waiting=waiting)
    conversation_state_update(conversation=conversation, state=updated, summary=summary)
    return summary


def _waiting(conversation: Conversation, held: list[int]) -> list[int]:
    """Of the approvals this conversation filed, those still waiting for a decision."""
    return sorted(
        PendingAction.objects.filter(
            organisation_id=conversation.organisation_id, pk__in=held,
            status=PendingAction.Status.PENDING,
        ).values_list("pk", flat=True)
    )  # fmt: skip


def settle_summary(conversation: Conversation) -> None:
    """A decision turn changes what waits for approval: the summary says so at once."""
    conversation.refresh_from_db(fields=["summary", "state"])
    waiting = _waiting(conversation, (conversation.state or {}).get(wm.HELD, []))
    summary = wm.with_waiting(conversation.summary, waiting)
    if summary != conversation.summary:
        Conversation.objects.filter(pk=conversation.pk).update(summary=summary)
        conversation.summary = summary


def _learn(conversation: Conversation, state: TurnState, message: Message) -> None:
    """The customer profile (P3): this message's cheap signals now; at a farewell, the fuller
    extraction as a job once the turn is committed."""
    profiles.learn_from_message(conversation, message, state["memory"].profile)
    intents = {task.intent for task in state["reading"].understanding.tasks}
    intents |= {run.step.intent for run in state["delegation"].runs}
    if intents & ending(state["reading"].specs) and profiles.customers_of(conversation):
        memory_tasks.extract_after_commit(conversation.organisation_id, conversation.pk)


def run_decision(turn: Turn) -> TurnResult:
    """A manager's decision resumes the paused turn that filed the action (outside the reply's
    transaction: the graph's checkpoint is written on its own connection)."""

    def produce(run: TurnRun | None) -> Produced:
        assert run is not None
        followup = _followup(run, turn)

        def after() -> None:
            _settle_paused(turn)
            settle_summary(turn.conversation)

        return Produced(
            followup.reply, followup.trace, consulted=followup.consulted, steps=True, after=after
        )

    return answer_turn(turn, thinking(turn), produce, atomic=False)


def run_suggestion(turn: Turn, payload: SuggestionPayload) -> TurnResult:
    """An accepted suggestion's proposed call, through the Runner and the approval gate."""
    suggestion_id = payload["suggestion_id"]

    def produce(run: TurnRun | None) -> Produced:
        assert run is not None
        done = run_proposal(run, suggestion_id, turn.message.language or "es")
        return Produced(done.reply, done.trace, held=bool(done.trace.get("held")), steps=True)

    def reopen(exc: Exception) -> None:
        # Its call did not happen (the transaction rolled back): the suggestion is open again.
        suggestion_settle(
            suggestion_id=suggestion_id, organisation_id=turn.organisation_id,
            state=Suggestion.State.NEW, outcome=f"{type(exc).__name__}: {exc}",
        )  # fmt: skip

    return answer_turn(turn, thinking(turn), produce, on_failure=reopen)


def run_undo(turn: Turn, undo: UndoPayload) -> TurnResult:
    """An answer's undo: its inverse call through the Runner and the approval gate."""

    def produce(run: TurnRun | None) -> Produced:
        assert run is not None
        done = panel.run_undo(run, undo, turn.message.language or "es")
        return Produced(done.reply, done.trace, held=done.held)

    return answer_turn(turn, thinking(turn), produce)


def run_order(turn: Turn, order: DecisionOrder, emit: Any) -> TurnResult:
    """A decision ordered in the chat (copilot/decisions.py): decided, or refused, and said."""
    asked = turn.message
    language = asked.language or detect_language(asked.text) or "es"

    def produce(run: TurnRun | None) -> Produced:
        reply, trace = answer_order(turn, order, language)
        return Produced(reply, trace)

    return answer_turn(turn, emit, produce, language=language, opens_run=False)


def _followup(run: TurnRun, turn: Turn) -> Followup:
    paused = turn.resumes
    assert turn.approval_id is not None
    if paused is not None:
        state = resume(run, str(paused.pk), turn.approval_id)
        if state is not None and "followup" in state:
            return state["followup"]
    # No paused turn to resume (its checkpoint is gone): the decision alone.
    return run_decision_alone(run, turn.approval_id, turn.message.language or "es")


def _settle_paused(turn: Turn) -> None:
    """The paused turn is done once none of its held actions waits any more."""
    paused = turn.resumes
    if paused is None or paused.status != Turn.Status.WAITING:
        return
    waiting = PendingAction.objects.filter(
        turn_id=str(paused.pk),
        status__in=(PendingAction.Status.PENDING, PendingAction.Status.APPROVED),
    )
    if not waiting.exists():
        Turn.objects.filter(pk=paused.pk, status=Turn.Status.WAITING).update(
            status=Turn.Status.DONE
        )
        transaction.on_commit(
            lambda: checkpoints.forget(
                paused.organisation_id, paused.conversation_id, str(paused.pk)
            )
        )
