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

import datetime
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import IntegrityError, close_old_connections, transaction
from django.utils import timezone

from agents.abtest import apply_arms
from agents.base import load_handlers
from agents.context import TurnContext
from agents.events import (
    AcceptedEvent,
    ApprovalDecidedEvent,
    CompletedEvent,
    ConsultedEvent,
    ErrorEvent,
    Event,
    ThinkingEvent,
    UsageEvent,
)
from agents.models import Suggestion, ToolCall
from agents.proactive.services import suggestion_settle
from agents.selectors import agents_for_org
from approvals.models import PendingAction
from business.hygiene import text_problem
from business.models import Organisation
from copilot import (
    checkpoints,
    clarify,
    direct_line,
    engines,
    eventlog,
    memory_tasks,
    panel,
    profiles,
    replies,
)
from copilot import memory as wm
from copilot import whatsapp_customers as wa_customers
from copilot.answers import steps_for_turn
from copilot.decisions import answer_order
from copilot.graph import get_graph, pause, resume, run_graph
from copilot.models import AgentRun, Conversation, ConversationEvent, Message, Turn
from copilot.proposals import run_proposal
from copilot.resume import run_decision_alone
from copilot.router_cache import router_for
from copilot.services import (
    conversation_create,
    conversation_state_update,
    message_add,
    turn_finish,
    turn_seal,
)
from copilot.state import Followup, TurnRun, TurnState
from copilot.streaming import TextStream
from llm.client import sdk_client
from llm.provider import engine_for
from llm.selectors import turn_usage
from nlu.acts import shipped_model
from nlu.decisions import DecisionOrder, read_decision
from nlu.language import detect_language
from nlu.values import ending

logger = logging.getLogger(__name__)


class MessageRefused(ValueError):
    """The text cannot be stored (`code`: "nul" or "surrogate")."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass(frozen=True)
class Accepted:
    turn_id: str
    message_id: int
    event: Event  # `accepted` (or `approval_decided`) as published, with its seq
    duplicate: bool = False  # the same client_id was accepted before: nothing new was stored


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


# --- 1. stored first ------------------------------------------------------------------------


def accept_message(
    *,
    conversation: Conversation,
    user_id: int | None,
    text: str,
    client_id: str = "",
    consult: Sequence[str] = (),
    meta: dict[str, Any] | None = None,
) -> Accepted:
    """Store the user's message and its queued turn, and publish `accepted`, in one commit."""
    problem = text_problem(text)
    if problem is not None:
        raise MessageRefused(problem)
    if client_id and (earlier := _accepted_before(conversation, client_id)) is not None:
        return earlier
    try:
        with transaction.atomic():
            message = message_add(
                conversation=conversation, role=Message.Role.USER, text=text,
                language=detect_language(text), client_id=client_id,
                # The agents the operator ticked (T3): the turn must consult them.
                # What the channel said about it (a WhatsApp message's sender and timestamp).
                trace={**(meta or {}), **({"consult": list(consult)} if consult else {})},
            )  # fmt: skip
            turn = Turn.objects.create(
                organisation_id=conversation.organisation_id, conversation=conversation,
                message=message, user_id=user_id, created_at=message.created_at,
            )  # fmt: skip
            event = eventlog.publish(
                conversation.organisation_id,
                conversation.pk,
                AcceptedEvent(
                    type="accepted", turn_id=str(turn.pk), message_id=message.pk, text=text,
                    client_id=client_id, title=conversation.title,
                ),
            )  # fmt: skip
    except IntegrityError:
        # The same frame from two sockets at once: the other one stored it.
        earlier = _accepted_before(conversation, client_id) if client_id else None
        if earlier is None:
            raise
        return earlier
    return Accepted(turn_id=str(turn.pk), message_id=message.pk, event=event)


def _accepted_before(conversation: Conversation, client_id: str) -> Accepted | None:
    message = (
        Message.objects.filter(conversation=conversation, client_id=client_id)
        .select_related("turn")
        .first()
    )
    if message is None:
        return None
    turn_id = str(message.turn.pk)
    row = ConversationEvent.objects.filter(
        conversation=conversation, turn_id=turn_id, type="accepted"
    ).first()
    event = AcceptedEvent(
        type="accepted", turn_id=turn_id, message_id=message.pk, text=message.text,
        client_id=client_id,
    )  # fmt: skip
    if row is not None:
        event["seq"] = row.seq
    return Accepted(turn_id=turn_id, message_id=message.pk, event=event, duplicate=True)


def accept_decision(action: PendingAction) -> Accepted | None:
    """A manager's decision (or the expiry) on a held action enters its conversation like a
    message: a note, a queued turn that will resume the paused one, and `approval_decided`.
    None when the action belongs to no conversation."""
    if action.conversation_id is None:
        return None
    conversation = Conversation.objects.filter(
        pk=action.conversation_id, organisation_id=action.organisation_id
    ).first()
    if conversation is None:
        return None
    paused = Turn.objects.filter(pk=action.turn_id).first() if _is_uuid(action.turn_id) else None
    language = (paused.message.language if paused is not None else "") or "es"
    decider = action.decided_by
    name = (decider.get_full_name() or decider.get_username()) if decider is not None else ""
    note = replies.decision_note(
        status=str(action.status), approval_id=action.pk, summary=action.summary_in(language),
        decided_by=name, language=language,
    )  # fmt: skip
    with transaction.atomic():
        message = message_add(
            conversation=conversation, role=Message.Role.SYSTEM, text=note, language=language,
        )  # fmt: skip
        turn = Turn.objects.create(
            organisation_id=conversation.organisation_id, conversation=conversation,
            message=message, kind=Turn.Kind.DECISION, resumes=paused, approval_id=action.pk,
            # The approved call acts for the person who asked for it (the records' history
            # names them); who decided is in the action's audit trail.
            user_id=action.requested_by_id,
            created_at=message.created_at,
        )  # fmt: skip
        event = eventlog.publish(
            conversation.organisation_id, conversation.pk,
            ApprovalDecidedEvent(
                type="approval_decided", turn_id=str(turn.pk), approval_id=action.pk,
                status=str(action.status), summary=action.summary_in(language),
                decided_by=name, reason=action.decision_reason, message_id=message.pk,
                text=note,
            ),
        )  # fmt: skip
    return Accepted(turn_id=str(turn.pk), message_id=message.pk, event=event)


def accept_suggestion(
    suggestion: Suggestion, *, user: Any, note: str, language: str
) -> Conversation:
    """An accepted suggestion enters the chat like a message: a note (what was accepted) in a
    new conversation of the person who accepted it, and a queued turn that runs its proposed
    call. The note carries the suggestion's id in its trace; a note with one is the only kind
    of stored message whose turn runs a proposal instead of the graph (see `_run`). The caller
    hands the conversation to a runner once this commits."""
    with transaction.atomic():
        conversation = conversation_create(
            organisation=suggestion.organisation, user=user, title=note
        )
        message = message_add(
            conversation=conversation, role=Message.Role.SYSTEM, text=note, language=language,
            trace={"suggestion_id": suggestion.pk},
        )  # fmt: skip
        turn = Turn.objects.create(
            organisation_id=conversation.organisation_id, conversation=conversation,
            message=message, user_id=user.pk, created_at=message.created_at,
        )  # fmt: skip
        Suggestion.objects.filter(pk=suggestion.pk).update(
            conversation_id=conversation.pk, turn_id=str(turn.pk)
        )
        eventlog.publish(
            conversation.organisation_id, conversation.pk,
            AcceptedEvent(type="accepted", turn_id=str(turn.pk), message_id=message.pk,
                          text=note, client_id=""),
        )  # fmt: skip
    return conversation


def _suggestion_of(message: Message) -> int | None:
    if message.role != Message.Role.SYSTEM:
        return None
    value = (message.trace or {}).get("suggestion_id")
    return value if isinstance(value, int) else None


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


# --- 3. a claimed turn, answered --------------------------------------------------------------


def run_turn(turn_id: str) -> TurnResult:
    """Answer a turn the runner has claimed; every event goes to the conversation's log and
    group. Never raises: a failure is stored and published as the turn's answer."""
    close_old_connections()
    try:
        turn = Turn.objects.select_related("conversation__organisation", "message", "user").get(
            pk=turn_id
        )
        return _run(turn)
    finally:
        close_old_connections()


def _emitter(turn: Turn) -> Any:
    organisation_id, conversation_id = turn.organisation_id, turn.conversation_id

    def emit(event: Event) -> None:
        eventlog.publish(organisation_id, conversation_id, event)

    return emit


def _run(turn: Turn) -> TurnResult:
    if turn.kind == Turn.Kind.DECISION:
        return _run_decision(turn)
    suggestion_id = _suggestion_of(turn.message)
    if suggestion_id is not None:
        return _run_suggestion(turn, suggestion_id)
    undo = panel.undo_of(turn.message)
    if undo is not None:  # "undo" under an answer (copilot/panel.py): its inverse call
        return _run_undo(turn, undo)
    turn_id, asked, conversation = str(turn.pk), turn.message, turn.conversation
    if _person_answers(conversation):
        return _left_to_a_person(turn)
    emit = _emitter(turn)
    emit(ThinkingEvent(type="thinking", turn_id=turn_id, message_id=asked.pk))
    if conversation.channel == Conversation.Channel.WHATSAPP:  # a customer writes (14.3)
        if conversation.customer_id is None and not wa_customers.link_by_phone(conversation):
            return _run_registration(turn, emit)
        wa_customers.pin_subject(conversation)
    elif (order := read_decision(asked.text)) is not None:
        # "aprobá la #12": decided here, not understood as a request
        return _run_order(turn, order, emit)
    return _run_graph(turn, emit)


def _person_answers(conversation: Conversation) -> bool:
    """A person took the WhatsApp conversation over after this turn was queued (the row is read
    again: the mode may have changed since the turn was loaded)."""
    if conversation.channel != Conversation.Channel.WHATSAPP:
        return False
    mode = Conversation.objects.filter(pk=conversation.pk).values_list("mode", flat=True).first()
    return mode == Conversation.Mode.HUMAN


def _left_to_a_person(turn: Turn) -> TurnResult:
    """The copilot does not answer a conversation a person handles: the turn ends unanswered."""
    language = turn.message.language or "es"
    # Shown in the panel only (no message: nothing goes to the customer); it closes the turn
    # for every open page.
    note = replies.t(
        language,
        es="El copiloto no responde: una persona atiende esta conversación.",
        en="The copilot does not answer: a person handles this conversation.",
    )
    with transaction.atomic():
        turn_finish(turn=turn, status=Turn.Status.DONE, error="left to a person (human mode)")
        _emitter(turn)(_completed(str(turn.pk), None, note))
    return TurnResult(str(turn.pk), True, "", language, user_message_id=turn.message_id)


def _run_graph(turn: Turn, emit: Any, text: str | None = None, opening: str = "") -> TurnResult:
    """The graph's answer to the turn's message (or to `text`, a registered customer's first
    request), stored and published; `opening` goes before it."""
    turn_id, asked, conversation = str(turn.pk), turn.message, turn.conversation
    started, cpu_started = time.perf_counter(), time.thread_time()
    try:
        run = _open_run(turn, emit, text)
        state = run_graph(run)
        if opening:
            state["reply"] = f"{opening}\n\n{state['reply']}"
            state["parts"] = []
        documents = _for_customer(run, state, conversation, asked)
        language = state["reading"].language or asked.language or "es"
        # Wall time per node and for the graph, and the graph's CPU time in this thread (what
        # the turn costs when the machine is not busy with anything else).
        timings = {
            **state.get("timings", {}),
            "graph": (time.perf_counter() - started) * 1000,
            "graph_cpu": (time.thread_time() - cpu_started) * 1000,
        }
        trace = {**state.get("trace", {}), "turn_id": turn_id, "timings_ms": _rounded(timings)}
        trace["did"] = steps_for_turn(conversation.pk, turn_id)  # the "what I did" block
        held = bool(state["delegation"].held)
        if held:  # it waits for a manager: checkpointed before anyone can decide
            pause(run, state)
        with transaction.atomic():
            answer = _store_reply(conversation, state, language, trace)
            if documents:  # after the reply, each as a WhatsApp document
                answer = wa_customers.documents_add(conversation, documents, language) or answer
            summary = _remember(conversation, state, asked, run.ctx.now)
            if run.llm is not None and settings.COPILOT_MODEL_SUMMARY:  # the model's gist, later
                memory_tasks.summarize_after_commit(
                    conversation.organisation_id, conversation.pk, summary
                )
            _learn(conversation, state, asked)
            status = Turn.Status.WAITING if held else Turn.Status.DONE
            turn_finish(turn=turn, status=status, answer=answer)
            _finish_events(run, turn_id, answer.pk, state["reply"], state.get("consulted", []))
    except Exception as exc:
        logger.exception("turn %s failed", turn_id)
        return _fail(turn, emit, exc)
    return TurnResult(
        turn_id, True, state["reply"], language, user_message_id=asked.pk,
        assistant_message_id=answer.pk, timings=timings,
    )  # fmt: skip


def _open_run(turn: Turn, emit: Any, text: str | None = None) -> TurnRun:
    """The turn's context, its engine and model client, and the enabled agents. A customer's
    own conversation (WhatsApp) pins the turn to that customer's records."""
    conversation = turn.conversation
    customer_id = (
        conversation.customer_id if conversation.channel == Conversation.Channel.WHATSAPP else None
    )
    ctx = TurnContext(
        organisation=conversation.organisation, user=turn.user, conversation_id=conversation.pk,
        now=timezone.now(), turn_id=str(turn.pk), message_id=turn.message_id,
        text=turn.message.text if text is None else text, emit=emit, customer_id=customer_id,
    )  # fmt: skip
    engine, client = engines.open_for(ctx)
    # Intents are only read on the rare directive fallback: no prefetch on every turn.
    enabled = agents_for_org(conversation.organisation).prefetch_related(None)
    ticked = (turn.message.trace or {}).get("consult") if turn.message.trace else None
    # A/B tests (V4): a running test's agent runs with this conversation's arm configuration.
    tested = apply_arms(conversation.organisation, conversation.pk, {a.name: a for a in enabled})
    return TurnRun(
        ctx=ctx, engine=engine, llm=client, stream=TextStream(emit, ctx.turn_id),
        agents=tested.agents,
        consult=tuple(str(name) for name in ticked) if isinstance(ticked, list) else (),
        arms=tested.arms, arm_intents=tested.intents,
    )  # fmt: skip


def _for_customer(
    run: TurnRun, state: TurnState, conversation: Conversation, asked: Message
) -> list[wa_customers.Document]:
    """A customer reads the reply: other people's data hidden, PDF links turned into the
    documents to send (those they asked for). Nothing changes for the organisation's members."""
    if run.ctx.customer_id is None:
        return []
    customer = conversation.customer
    language = state["reading"].language or asked.language or "es"
    reply, linked, hidden = wa_customers.for_customer(state["reply"], customer, language)
    state["reply"] = reply
    if state.get("parts"):
        state["parts"] = [
            (agent, wa_customers.for_customer(text, customer, language)[0])
            for agent, text in state["parts"]
        ]
    state.setdefault("trace", {})["customer_privacy"] = {"hidden": hidden}
    wanted = wa_customers.documents_wanted(asked.text)
    if wanted is None or customer is None:
        return []
    chosen = [d for d in linked if d.kind == wanted] or linked
    if not chosen and (latest := wa_customers.latest_document(customer, wanted)) is not None:
        chosen = [latest]
    if chosen:  # what the office would have done instead is not the customer's concern
        state["reply"] = wa_customers.sending_documents(state["reply"], language)
        state["parts"] = []
    return chosen


def _run_registration(turn: Turn, emit: Any) -> TurnResult:
    """An unknown number: one step of the registration (copilot/whatsapp_customers.py). Once
    complete the customer is created through the customer agent's `customer_create` tool and
    the conversation linked to them; their first request, if they made one, is then answered."""
    turn_id, asked, conversation = str(turn.pk), turn.message, turn.conversation
    flow = (conversation.state or {}).get(wa_customers.STATE_KEY)
    try:
        if not isinstance(flow, dict):
            language = asked.language or "es"
            step = wa_customers.registration_start(
                asked.text, language, conversation.organisation.name
            )
        else:
            language = str(flow.get("language") or "es")
            step = wa_customers.registration_step(flow, asked.text)
        reply = step.reply
        if step.create:
            run = _open_run(turn, emit)
            customer = wa_customers.register(run, conversation, step.create, language)
            if customer is not None:
                pending = str((flow or {}).get("pending") or "")
                opening = wa_customers.registered(customer.name, language)
                if wa_customers.is_request(pending):  # the flow is over: its state goes
                    state = dict(conversation.state or {})
                    state.pop(wa_customers.STATE_KEY, None)
                    conversation_state_update(conversation=conversation, state=state)
                    wa_customers.pin_subject(conversation)
                    return _run_graph(turn, emit, text=pending, opening=opening)
                reply = f"{opening} {wa_customers.how_can_i_help(language)}"
            else:
                reply = wa_customers.registration_failed(language)
        with transaction.atomic():
            state = {k: v for k, v in (conversation.state or {}).items()
                     if k != wa_customers.STATE_KEY}  # fmt: skip
            if step.state is not None:
                state[wa_customers.STATE_KEY] = step.state
            conversation_state_update(conversation=conversation, state=state)
            answer = message_add(
                conversation=conversation, role=Message.Role.ASSISTANT, text=reply,
                language=language, trace={"turn_id": turn_id, "registration": step.state or {}},
            )  # fmt: skip
            turn_finish(turn=turn, status=Turn.Status.DONE, answer=answer)
            emit(ConsultedEvent(type="consulted", turn_id=turn_id, agents=[]))
            emit(_completed(turn_id, answer.pk, reply))
    except Exception as exc:
        logger.exception("registration turn %s failed", turn_id)
        return _fail(turn, emit, exc)
    return TurnResult(
        turn_id, True, reply, language, user_message_id=asked.pk, assistant_message_id=answer.pk
    )


def _finish_events(
    run: TurnRun, turn_id: str, answer_id: int, reply: str, consulted: list[Any]
) -> None:
    """`usage`, `consulted`, `completed`: logged with the reply they close (one commit), so a
    page rendered after the commit replays nothing of a finished turn."""
    if run.llm is not None:
        tokens_in, tokens_out = _turn_tokens(run.ctx.organisation.pk, turn_id)
        run.ctx.emit(
            UsageEvent(type="usage", turn_id=turn_id, tokens_in=tokens_in, tokens_out=tokens_out)
        )
    run.ctx.emit(ConsultedEvent(type="consulted", turn_id=turn_id, agents=consulted))
    run.ctx.emit(_completed(turn_id, answer_id, reply))


def _run_decision(turn: Turn) -> TurnResult:
    """A manager's decision resumes the paused turn that filed the action."""
    turn_id, note, conversation = str(turn.pk), turn.message, turn.conversation
    emit = _emitter(turn)
    emit(ThinkingEvent(type="thinking", turn_id=turn_id, message_id=note.pk))
    language = note.language or "es"
    try:
        run = _open_run(turn, emit)
        followup = _followup(run, turn)
        with transaction.atomic():
            answer = message_add(
                conversation=conversation, role=Message.Role.ASSISTANT, text=followup.reply,
                language=language, trace={**followup.trace, "turn_id": turn_id,
                "did": steps_for_turn(conversation.pk, turn_id)},
            )  # fmt: skip
            turn_finish(turn=turn, status=Turn.Status.DONE, answer=answer)
            _settle_paused(turn)
            _settle_summary(conversation)
            _finish_events(run, turn_id, answer.pk, followup.reply, followup.consulted)
    except Exception as exc:
        logger.exception("decision turn %s failed", turn_id)
        return _fail(turn, emit, exc)
    return TurnResult(
        turn_id, True, followup.reply, language, user_message_id=note.pk,
        assistant_message_id=answer.pk,
    )  # fmt: skip


def _run_suggestion(turn: Turn, suggestion_id: int) -> TurnResult:
    """An accepted suggestion's proposed call, through the Runner and the approval gate."""
    turn_id, note, conversation = str(turn.pk), turn.message, turn.conversation
    emit = _emitter(turn)
    emit(ThinkingEvent(type="thinking", turn_id=turn_id, message_id=note.pk))
    language = note.language or "es"
    try:
        run = _open_run(turn, emit)
        with transaction.atomic():
            done = run_proposal(run, suggestion_id, language)
            held = bool(done.trace.get("held"))
            answer = message_add(
                conversation=conversation, role=Message.Role.ASSISTANT, text=done.reply,
                language=language, trace={**done.trace, "turn_id": turn_id,
                "did": steps_for_turn(conversation.pk, turn_id)},
            )  # fmt: skip
            status = Turn.Status.WAITING if held else Turn.Status.DONE
            turn_finish(turn=turn, status=status, answer=answer)
            _finish_events(run, turn_id, answer.pk, done.reply, [])
    except Exception as exc:
        logger.exception("suggestion turn %s failed", turn_id)
        # Its call did not happen (the transaction rolled back): the suggestion is open again.
        suggestion_settle(
            suggestion_id=suggestion_id, organisation_id=turn.organisation_id,
            state=Suggestion.State.NEW, outcome=f"{type(exc).__name__}: {exc}",
        )  # fmt: skip
        return _fail(turn, emit, exc)
    return TurnResult(
        turn_id, True, done.reply, language, user_message_id=note.pk,
        assistant_message_id=answer.pk,
    )  # fmt: skip


def _run_undo(turn: Turn, undo: dict[str, Any]) -> TurnResult:
    """An answer's undo: its inverse call through the Runner and the approval gate."""
    turn_id, note, conversation = str(turn.pk), turn.message, turn.conversation
    emit = _emitter(turn)
    emit(ThinkingEvent(type="thinking", turn_id=turn_id, message_id=note.pk))
    language = note.language or "es"
    try:
        run = _open_run(turn, emit)
        with transaction.atomic():
            done = panel.run_undo(run, undo, language)
            answer = message_add(
                conversation=conversation, role=Message.Role.ASSISTANT, text=done.reply,
                language=language, trace={**done.trace, "turn_id": turn_id},
            )  # fmt: skip
            status = Turn.Status.WAITING if done.held else Turn.Status.DONE
            turn_finish(turn=turn, status=status, answer=answer)
            _finish_events(run, turn_id, answer.pk, done.reply, [])
    except Exception as exc:
        logger.exception("undo turn %s failed", turn_id)
        return _fail(turn, emit, exc)
    return TurnResult(
        turn_id, True, done.reply, language, user_message_id=note.pk,
        assistant_message_id=answer.pk,
    )  # fmt: skip


def _run_order(turn: Turn, order: DecisionOrder, emit: Any) -> TurnResult:
    """A decision ordered in the chat (copilot/decisions.py): decided, or refused, and said."""
    turn_id, asked = str(turn.pk), turn.message
    language = asked.language or detect_language(asked.text) or "es"
    try:
        with transaction.atomic():
            reply, trace = answer_order(turn, order, language)
            answer = message_add(
                conversation=turn.conversation, role=Message.Role.ASSISTANT, text=reply,
                language=language, trace={**trace, "turn_id": turn_id},
            )  # fmt: skip
            turn_finish(turn=turn, status=Turn.Status.DONE, answer=answer)
            emit(ConsultedEvent(type="consulted", turn_id=turn_id, agents=[]))
            emit(_completed(turn_id, answer.pk, reply))
    except Exception as exc:
        logger.exception("decision order in turn %s failed", turn_id)
        return _fail(turn, emit, exc)
    return TurnResult(
        turn_id, True, reply, language, user_message_id=asked.pk, assistant_message_id=answer.pk
    )


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


def _completed(turn_id: str, message_id: int | None, text: str) -> CompletedEvent:
    return CompletedEvent(type="completed", turn_id=turn_id, message_id=message_id, text=text)


def _error(turn_id: str, code: str, message: str) -> ErrorEvent:
    return ErrorEvent(type="error", turn_id=turn_id, code=code, message=message)


def _store_reply(
    conversation: Conversation, state: TurnState, language: str, trace: dict[str, Any]
) -> Message:
    """The reply as stored history. When the model's agents answered, each agent's answer is its
    own message (history stays separated per agent); the trace goes with the last one."""
    parts: list[tuple[str, str]] = state.get("parts") or []
    direct = state["reading"].direct_agent
    # The model's agents, and a direct line's verbatim block with the copilot's notes after it
    # (guarded), are stored one message per speaker.
    per_agent = (state["reading"].routed_by == "model" or bool(direct)) and len(parts) > 1
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


def _turn_tokens(organisation_id: int, turn_id: str) -> tuple[int, int]:
    usage = turn_usage(organisation_id, turn_id)
    return usage.tokens_in, usage.tokens_out


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


def _settle_summary(conversation: Conversation) -> None:
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


def _fail(turn: Turn, emit: Any, exc: Exception) -> TurnResult:
    """Say it failed, in the message's language, and keep the failure in the history."""
    turn_id, asked = str(turn.pk), turn.message
    language = asked.language or "es"
    text = replies.turn_failed(language)
    error = f"{type(exc).__name__}: {exc}"
    answer_id: int | None = None
    try:
        emit(_error(turn_id, "turn_failed", text))
        with transaction.atomic():
            answer = message_add(
                conversation=turn.conversation, role=Message.Role.ASSISTANT, text=text,
                language=language, trace={"turn_id": turn_id, "error": error},
            )  # fmt: skip
            turn_finish(turn=turn, status=Turn.Status.FAILED, answer=answer, error=error)
        answer_id = answer.pk
        emit(_completed(turn_id, answer_id, text))
    except Exception:
        logger.exception("turn %s: could not store the failure", turn_id)
    return TurnResult(
        turn_id, False, text, language, user_message_id=asked.pk,
        assistant_message_id=answer_id, error_code="turn_failed",
    )  # fmt: skip


def _rounded(timings: dict[str, float]) -> dict[str, float]:
    return {name: round(ms, 2) for name, ms in timings.items()}


# --- a turn whose runner died ---------------------------------------------------------------


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
        emit = _emitter(turn)
        emit(_error(turn_id, "interrupted", text))
        emit(_completed(turn_id, answer.pk, text))
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


# --- before the first turn ------------------------------------------------------------------


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
