"""The turn service: a message is stored before anything else, then answered as a job.

Every entry point — the panel's socket, the WhatsApp webhook, a schedule, a manager's decision —
goes the same way:

1. `accept_message` stores the user's message and its queued `Turn` and publishes `accepted`, all
   in one transaction. Nothing accepted lives only in memory; a frame sent twice with the same
   `client_id` is one message.
2. The runner (copilot/runner.py) hands the conversation to a job — a Celery task in production,
   a worker thread of this process on the embedded default — which claims the conversation's
   queued turns one at a time, in order, and calls `run_turn` for each.
3. `run_turn` answers a claimed turn: `thinking`, the graph (its events as they happen), the
   reply stored, then `consulted` and `completed` — or `error` and `completed`. Every event goes
   through the conversation's event log and channel-layer group (copilot/eventlog.py).

A turn found *running* after its runner died is never re-run: `interrupt_turn` says what was done
(from the tool and agent rows) and what was not.
"""

from __future__ import annotations

import logging
from typing import cast

from django.db import close_old_connections, transaction
from django.utils import timezone

from agents.base import load_handlers
from agents.events import (
    ThinkingEvent,
)
from agents.models import ToolCall
from agents.selectors import agents_for_org
from business.models import Organisation
from copilot.answering import TurnResult, completed_event, emitter, error_event
from copilot.channels import channel_of
from copilot.kinds import (
    answer_with_graph,
    left_to_a_person,
    run_decision,
    run_order,
    run_suggestion,
    run_undo,
)
from copilot.models import AgentRun, Message, Turn
from copilot.orchestration import engines, replies
from copilot.orchestration.graph import get_graph
from copilot.orchestration.state import SuggestionPayload, UndoPayload
from copilot.router_cache import router_for
from copilot.services import (
    message_add,
    turn_seal,
)
from llm.client import sdk_client
from llm.provider import engine_for
from nlu.acts import shipped_model
from nlu.decisions import read_decision
from nlu.language import detect_language

logger = logging.getLogger(__name__)


def run_turn(turn: Turn) -> TurnResult:
    """Answer a turn the runner has claimed (read with its conversation, organisation, message
    and user); every event goes to the conversation's log and group. Never raises: a failure is
    stored and published as the turn's answer. Whatever the turn emitted after its last commit
    point is logged as it ends (copilot/turnlog.py), however it ended."""
    try:
        return _run(turn)
    finally:
        try:
            emitter(turn).flush()
        except Exception:  # the database is gone: the failure is already the turn's
            logger.exception("turn %s: could not log its last events", turn.pk)


def _run(turn: Turn) -> TurnResult:
    if turn.kind == Turn.Kind.DECISION:
        return run_decision(turn)
    if turn.kind == Turn.Kind.SUGGESTION:
        return run_suggestion(turn, cast(SuggestionPayload, turn.payload))
    if turn.kind == Turn.Kind.UNDO:  # "undo" under an answer (copilot/panel.py): its inverse call
        return run_undo(turn, cast(UndoPayload, turn.payload))
    turn_id, asked, conversation = str(turn.pk), turn.message, turn.conversation
    channel = channel_of(conversation)
    if channel.person_answers(conversation):
        return left_to_a_person(turn)
    emit = emitter(turn)
    emit(ThinkingEvent(type="thinking", turn_id=turn_id, message_id=asked.pk))
    answered = channel.before_graph(turn, emit)  # a channel's own step (a registration)
    if isinstance(answered, TurnResult):
        return answered
    if channel.takes_decisions and (order := read_decision(asked.text)) is not None:
        # "aprobá la #12": decided here, not understood as a request
        return run_order(turn, order, emit)
    return answer_with_graph(turn, emit)


def interrupt_turn(turn: Turn) -> bool:
    """Close a turn that was running when its runner died, without running it again: say what
    its tools did and what it had still planned. False when someone else closed it first."""
    turn_id, asked = str(turn.pk), turn.message
    language = asked.language or detect_language(asked.text)
    text = _interruption_text(turn, language)
    # The claim, the answer and its events commit together: a crash in between leaves the turn
    # running (recovery closes it again), never closed without an answer.
    with transaction.atomic():
        claimed = Turn.objects.filter(pk=turn.pk, status=Turn.Status.RUNNING).update(
            status=Turn.Status.INTERRUPTED, finished_at=timezone.now()
        )
        if claimed != 1:
            return False
        answer = message_add(
            conversation=turn.conversation, role=Message.Role.ASSISTANT, text=text,
            language=language, trace={"turn_id": turn_id, "interrupted": True},
        )  # fmt: skip
        Turn.objects.filter(pk=turn.pk).update(answer=answer, error="runner died mid-turn")
        turn.answer = answer
        turn_seal(turn)
        emit = emitter(turn)
        emit(error_event(turn_id, "interrupted", text))
        emit(completed_event(turn_id, answer.pk, text))
    return True


def _interruption_text(turn: Turn, language: str) -> str:
    turn_id = str(turn.pk)
    calls = ToolCall.objects.filter(organisation_id=turn.organisation_id, turn_id=turn_id)
    done = [
        call.summary or call.tool
        for call in calls
        if call.ok and (call.approval_id is None or call.approved) and call.category != "safe"
    ]
    held = [f"#{call.approval_id}" for call in calls if call.approval_id and not call.approved]
    finished = set(
        AgentRun.objects.filter(
            organisation_id=turn.organisation_id, turn_id=turn_id, yielded=False
        ).values_list("intent", flat=True)
    )
    missing = [
        replies.intent_phrase(step.get("intent", ""), language)
        for step in turn.plan
        if step.get("intent") not in finished
    ]
    return replies.interrupted(
        asked=turn.message.text, done=done, held=held, missing=missing, language=language
    )


def warm_up(organisation_id: int) -> None:
    """Build the graph and train the dialogue-act model and the organisation's router before its
    first turn (and, on a model engine, open the SDK client and build the orchestrator's tools):
    the one-off cost is paid while the operator is still typing, not by the first answer."""
    try:
        load_handlers()
        get_graph()
        shipped_model()  # the dialogue-act model the write gate reads (trained once a process)
        organisation = Organisation.objects.filter(pk=organisation_id).first()
        if organisation is None:
            return
        router_for(organisation)
        _engine, provider = engine_for(organisation)
        if provider is not None:
            sdk_client(provider)
            agents = {a.name: a for a in agents_for_org(organisation).prefetch_related(None)}
            engines.tool_schemas(organisation, agents)
    except Exception:  # a failed warm-up only means the first turn pays; the turn reports errors
        logger.exception("warm-up failed for organisation %s", organisation_id)
    finally:
        close_old_connections()
