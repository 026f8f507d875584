"""Reads of the chat, always scoped to an organisation or to the user's memberships."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Min, Q, QuerySet

from agents.events import ConsultedAgent
from business.models import Membership, Organisation
from business.roles import can, outranks
from copilot.models import AgentRun, Conversation, ConversationEvent, Message, Turn

AnyUser = AbstractBaseUser | AnonymousUser


class ConversationAccess(NamedTuple):
    """A conversation the user may open, and how: their own (read and write), or a member's they
    supervise (`read_only`: a manager or admin reading, never writing)."""

    conversation: Conversation
    read_only: bool


def get_conversation_for_user(user: AnyUser, pk: int | str) -> ConversationAccess:
    """The conversation when the user may open it; DoesNotExist else (a colleague's or another
    organisation's looks the same as a missing one).

    The rule (README, "Conversation privacy"): a member writes only into their own
    conversations; every member who chats reads the WhatsApp ones (customers'); a manager or
    admin of the organisation reads, read-only, those of members of a lower role and those with
    no member behind them (schedules, someone who left).
    """
    if not user.is_authenticated:
        raise Conversation.DoesNotExist
    conversation = (
        Conversation.objects.filter(organisation__memberships__user__pk=user.pk)
        .select_related("organisation", "user")
        .distinct()
        .get(pk=pk)
    )
    if conversation.user_id == user.pk:
        return ConversationAccess(conversation, read_only=False)
    members = {
        membership.user_id: membership
        for membership in Membership.objects.filter(
            organisation_id=conversation.organisation_id,
            user_id__in=[user.pk, conversation.user_id or user.pk],
        )
    }
    reader = members.get(user.pk)
    if conversation.channel == Conversation.Channel.WHATSAPP and can(reader, "chat"):
        # A customer's conversation: every member who chats reads it (and may take it over,
        # whatsapp/humans.py); the copilot's composer stays closed.
        return ConversationAccess(conversation, read_only=True)
    if can(reader, "supervise_conversations") and outranks(
        reader, members.get(conversation.user_id) if conversation.user_id else None
    ):
        return ConversationAccess(conversation, read_only=True)
    raise Conversation.DoesNotExist


def replay_from(conversation: Conversation) -> int:
    """Where a freshly rendered page starts listening: just before the first event of a turn
    still queued or running (its stored messages are on the page, its answer is not yet), else
    after the last event. The panel drops what it already shows by message id."""
    unfinished = Turn.objects.filter(
        conversation=conversation, status__in=(Turn.Status.QUEUED, Turn.Status.RUNNING)
    ).values_list("pk", flat=True)
    first = ConversationEvent.objects.filter(
        conversation=conversation, turn_id__in=[str(pk) for pk in unfinished]
    ).aggregate(first=Min("seq"))["first"]
    return int(first) - 1 if first is not None else conversation.event_seq


def get_conversation_for_org(organisation_id: int, pk: int | str) -> Conversation:
    return Conversation.objects.select_related("organisation").get(
        pk=pk, organisation_id=organisation_id
    )


def recent_messages(
    conversation_id: int, limit: int = 3, before_id: int | None = None
) -> list[Message]:
    """The last `limit` messages, oldest first (optionally only those before a message)."""
    messages = Message.objects.filter(conversation_id=conversation_id)
    if before_id is not None:
        messages = messages.filter(pk__lt=before_id)
    latest = list(messages.order_by("-created_at", "-pk")[:limit])
    return latest[::-1]


def agent_runs_for_turn(organisation: Organisation, turn_id: str) -> QuerySet[AgentRun]:
    return AgentRun.objects.filter(organisation=organisation, turn_id=turn_id).order_by("pk")


def consulted_for_turn(
    organisation: Organisation, turn_id: str, labels: dict[str, str]
) -> list[ConsultedAgent]:
    """The consulted footer (T1) from this turn's execution rows, never from generated text.

    An agent that yielded did not act, so it is not listed; `labels` maps agent name → label.
    """
    return consulted_of(agent_runs_for_turn(organisation, turn_id), labels)


def consulted_of(runs: Iterable[AgentRun], labels: dict[str, str]) -> list[ConsultedAgent]:
    """The consulted footer from a turn's `AgentRun` rows, in their order."""
    consulted: list[ConsultedAgent] = []
    for run in runs:
        if run.yielded:
            continue
        consulted.append(
            ConsultedAgent(
                agent=run.agent,
                label=labels.get(run.agent, run.agent),
                intent=run.intent,
                success=run.success,
                tools=len(run.tools or []),
            )
        )
    return consulted


def conversations_for_user(user: AnyUser, organisation: Organisation) -> QuerySet[Conversation]:
    """The user's own panel conversations in `organisation`, newest first."""
    if not user.is_authenticated or organisation is None:
        return Conversation.objects.none()
    return Conversation.objects.filter(
        organisation=organisation, organisation__memberships__user__pk=user.pk, user__pk=user.pk
    ).order_by("-updated_at")


def readable_conversations(user: AnyUser, organisation: Organisation) -> QuerySet[Conversation]:
    """Every conversation of `organisation` the user may read (get_conversation_for_user's
    rule as a query): their own and, for a supervisor, those of members of a lower role, of
    someone who left and of no member at all (WhatsApp, schedules). Newest first."""
    if not user.is_authenticated or organisation is None:
        return Conversation.objects.none()
    conversations = Conversation.objects.filter(organisation=organisation)
    reader = Membership.objects.filter(organisation=organisation, user_id=user.pk).first()
    if reader is None:
        return Conversation.objects.none()
    mine = Q(user_id=user.pk)
    if not can(reader, "supervise_conversations"):
        return conversations.filter(mine).order_by("-updated_at")
    members = Membership.objects.filter(organisation=organisation)
    lower = [m.user_id for m in members if outranks(reader, m)]
    return conversations.filter(
        mine
        | Q(user_id__in=lower)
        | Q(user__isnull=True)
        | ~Q(user_id__in=members.values("user_id"))
    ).order_by("-updated_at")


def whatsapp_conversations(user: AnyUser, organisation: Organisation) -> QuerySet[Conversation]:
    """The organisation's WhatsApp conversations, for every member who chats (customers write
    them; any member may take one over), newest first."""
    if not user.is_authenticated or organisation is None:
        return Conversation.objects.none()
    reader = Membership.objects.filter(organisation=organisation, user_id=user.pk).first()
    if not can(reader, "chat"):
        return Conversation.objects.none()
    return Conversation.objects.filter(
        organisation=organisation, channel=Conversation.Channel.WHATSAPP
    ).order_by("-updated_at")
