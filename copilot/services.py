"""Writes of the chat: conversations, their messages, working state, turns and agent runs."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.utils import timezone

from business.models import Organisation
from copilot.channels import channel_of
from copilot.ledger import seal_turn
from copilot.models import AgentRun, Conversation, Message, Turn

logger = logging.getLogger(__name__)

TITLE_LENGTH = 60

# What the runner does in the transaction that closes the turn it claimed (copilot/runner.py:
# give the conversation's lease back when nothing else is queued), so a turn's last commit is
# also the runner's. Called with the finished turn; a turn it did not claim is left alone.
at_turn_close: ContextVar[Callable[[Turn], None] | None] = ContextVar("at_turn_close", default=None)


def conversation_create(
    *,
    organisation: Organisation,
    user: AbstractBaseUser | None,
    channel: str = Conversation.Channel.PANEL,
    title: str = "",
    contact: str = "",
) -> Conversation:
    return Conversation.objects.create(
        organisation=organisation,
        user_id=user.pk if user is not None else None,
        channel=channel,
        title=title[:120],
        contact=contact,
    )


def _title_from(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1].rstrip() + "…"


def message_add(
    *,
    conversation: Conversation,
    role: str,
    text: str,
    language: str = "",
    agent: str = "",
    trace: dict[str, Any] | None = None,
    client_id: str = "",
    touch: bool = True,
) -> Message:
    """Store one message and touch the conversation (its first user message names it).
    `touch=False`: the caller updates the conversation row in the same transaction anyway."""
    now = timezone.now()
    message = Message.objects.create(
        organisation_id=conversation.organisation_id,
        conversation=conversation,
        role=role,
        text=text,
        language=language,
        agent=agent,
        trace=trace or {},
        client_id=client_id,
        created_at=now,
    )
    fields: dict[str, Any] = {"updated_at": now}
    if not conversation.title and role == Message.Role.USER:
        fields["title"] = _title_from(text)
    if touch or "title" in fields:
        Conversation.objects.filter(pk=conversation.pk).update(**fields)
    for key, value in fields.items():
        setattr(conversation, key, value)
    if role == Message.Role.ASSISTANT:  # a channel's reader gets it (WhatsApp: the outbox)
        channel_of(conversation).message_stored(conversation, message)
    return message


def conversation_state_update(
    *, conversation: Conversation, state: dict[str, Any], summary: str | None = None
) -> Conversation:
    """Replace the working state (and the summary when given) of a conversation."""
    fields: dict[str, Any] = {"state": state, "updated_at": timezone.now()}
    if summary is not None:
        fields["summary"] = summary
    Conversation.objects.filter(pk=conversation.pk).update(**fields)
    for key, value in fields.items():
        setattr(conversation, key, value)
    return conversation


def turn_plan_record(*, turn_id: str, plan: list[dict[str, str]]) -> None:
    """What the turn is about to run, step by step: what an interruption would have left undone.
    (A graph run without a stored turn — a benchmark, a dry run — has nothing to record.)"""
    try:
        Turn.objects.filter(pk=turn_id).update(plan=plan)
    except ValidationError:  # not a turn's id
        return


def turn_finish(*, turn: Turn, status: str, answer: Message | None = None, error: str = "") -> None:
    fields = {
        "status": status, "answer": answer, "error": error[:2000], "finished_at": timezone.now(),
    }  # fmt: skip
    Turn.objects.filter(pk=turn.pk).update(**fields)
    for key, value in fields.items():
        setattr(turn, key, value)
    turn_seal(turn)
    if (closing := at_turn_close.get()) is not None:
        closing(turn)


def turn_seal(turn: Turn) -> None:
    """Seal the ended turn into its conversation's trace chain (copilot/ledger.py).

    A seal that cannot be written never costs the turn its answer (the seal is written in a
    savepoint of its own): the turn stays unsealed, which `verify_trace` reports."""
    try:
        seal_turn(turn)
    except Exception:
        logger.exception("turn %s: could not be sealed", turn.pk)


def agent_run_record(
    *,
    organisation: Organisation,
    conversation_id: int | None,
    turn_id: str,
    agent: str,
    intent: str,
    confidence: float,
    tools: list[str],
    plan_steps: int,
    latency_ms: float,
    success: bool,
    yielded: bool = False,
    error: str = "",
    permanent: bool = False,
    tokens_in: int = 0,
    tokens_out: int = 0,
    engine: str = "",
    source: str = "",
    rerouted_from: str = "",
    clarified: bool = False,
    arm: tuple[int, str] | None = None,
) -> AgentRun:
    """One row per sub-agent run: the runtime trace behind the footer and the metrics.

    `arm` is the A/B test and arm (agents.abtest) whose configuration the agent ran with."""
    return AgentRun.objects.create(
        organisation=organisation,
        conversation_id=conversation_id,
        turn_id=turn_id,
        agent=agent,
        intent=intent,
        confidence=round(confidence, 4),
        tools=tools,
        plan_steps=plan_steps,
        latency_ms=round(latency_ms, 2),
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        success=success,
        yielded=yielded,
        error=error[:2000],
        permanent=permanent,
        engine=engine[:10],
        source=source[:16],
        rerouted_from=rerouted_from[:40],
        clarified=clarified,
        abtest_id=arm[0] if arm is not None else None,
        abtest_arm=arm[1] if arm is not None else "",
    )
