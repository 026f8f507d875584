"""Reads of the chat, always scoped to an organisation or to the user's memberships."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db.models import QuerySet

from copilot.events import ConsultedAgent
from copilot.models import AgentRun, Conversation, Message

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    from business.models import Organisation

    AnyUser = AbstractBaseUser | AnonymousUser


def get_conversation_for_user(user: AnyUser, pk: int | str) -> Conversation:
    """The conversation when it belongs to one of the user's organisations; DoesNotExist else."""
    if not user.is_authenticated:
        raise Conversation.DoesNotExist
    return (
        Conversation.objects.filter(organisation__memberships__user__pk=user.pk)
        .select_related("organisation")
        .distinct()
        .get(pk=pk)
    )


def get_conversation_for_org(organisation_id: int, pk: int | str) -> Conversation:
    return Conversation.objects.select_related("organisation").get(
        pk=pk, organisation_id=organisation_id
    )


def recent_messages(
    conversation: Conversation, limit: int = 3, before_id: int | None = None
) -> list[Message]:
    """The last `limit` messages, oldest first (optionally only those before a message)."""
    messages = Message.objects.filter(conversation=conversation)
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
    consulted: list[ConsultedAgent] = []
    for run in agent_runs_for_turn(organisation, turn_id).filter(yielded=False):
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
