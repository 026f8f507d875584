"""The CopilotPanel pages: the conversation list, a new conversation, one conversation."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from agents.models import Agent
from business.roles import permission_required
from copilot import direct_line
from copilot.models import Conversation, Turn
from copilot.selectors import (
    conversations_for_user,
    get_conversation_for_user,
    readable_conversations,
    replay_from,
)
from copilot.services import conversation_create
from copilot.trace_browser import conversation_turns, turn_counts, turn_view

TRACE_PAGE = 30


@permission_required("chat")
def chat_index(request: HttpRequest) -> HttpResponse:
    latest = conversations_for_user(request.user, request.organisation).first()  # type: ignore[attr-defined]
    if latest is not None:
        return redirect("chat_detail", conversation_id=latest.pk)
    return render(request, "copilot/chat.html", {"conversations": [], "conversation": None})


@require_POST
@permission_required("chat")
def chat_new(request: HttpRequest) -> HttpResponse:
    conversation = conversation_create(
        organisation=request.organisation,  # type: ignore[attr-defined]
        user=request.user,  # type: ignore[arg-type]
    )
    return redirect("chat_detail", conversation_id=conversation.pk)


@permission_required("chat")
def chat_detail(request: HttpRequest, conversation_id: int) -> HttpResponse:
    try:
        conversation, read_only = get_conversation_for_user(request.user, conversation_id)
    except Conversation.DoesNotExist as exc:
        raise Http404 from exc
    context = {
        "conversation": conversation,
        # A supervisor reads a member's conversation: labelled as such, with no composer.
        "read_only": read_only,
        "owner_name": _owner_name(conversation),
        "conversations": conversations_for_user(request.user, conversation.organisation)[:30],
        # Not "messages": that name is Django's flash messages, which base.html renders.
        "chat_messages": conversation.messages.all(),
        "max_chars": settings.COPILOT_MAX_MESSAGE_CHARS,
        "replay_from": replay_from(conversation),
        "direct_line": _direct_line(conversation, request.LANGUAGE_CODE),
        # The agents an operator may tick for a message to consult (T3).
        "consultable": [
            (agent.name, agent.label(request.LANGUAGE_CODE[:2]))
            for agent in Agent.objects.filter(
                organisation_id=conversation.organisation_id, enabled=True
            ).order_by("name")
        ],
    }
    return render(request, "copilot/chat.html", context)


def _direct_line(conversation: Conversation, language: str) -> dict[str, str] | None:
    """The agent the conversation's direct line is open to (T2), for the panel's indicator."""
    name = (conversation.state or {}).get(direct_line.STATE_KEY)
    if not name:
        return None
    agent = Agent.objects.filter(
        organisation_id=conversation.organisation_id, name=name, enabled=True
    ).first()
    if agent is None:
        return None
    return {"agent": agent.name, "label": agent.label(language[:2])}


def _owner_name(conversation: Conversation) -> str:
    """Whose conversation it is, for the supervision banner: the member, or else its channel."""
    owner = conversation.user
    if owner is None:
        return str(conversation.get_channel_display())
    return owner.get_full_name() or owner.get_username()


# --- the trace browser (D5): managers and admins read what a turn understood and did -----------


@permission_required("supervise_conversations")
def trace_index(request: HttpRequest) -> HttpResponse:
    conversations = turn_counts(
        readable_conversations(request.user, request.organisation)  # type: ignore[attr-defined]
    ).select_related("user")
    page = Paginator(conversations, TRACE_PAGE).get_page(request.GET.get("page"))
    htmx = request.htmx  # type: ignore[attr-defined]
    partial = bool(htmx) and not htmx.history_restore_request
    template = "copilot/traces.html#rows" if partial else "copilot/traces.html"
    return render(request, template, {"page": page})


@permission_required("supervise_conversations")
def trace_conversation(request: HttpRequest, conversation_id: int) -> HttpResponse:
    try:
        conversation, _read_only = get_conversation_for_user(request.user, conversation_id)
    except Conversation.DoesNotExist as exc:
        raise Http404 from exc
    if conversation.organisation_id != request.organisation.pk:  # type: ignore[attr-defined]
        raise Http404
    turns = conversation_turns(conversation)
    return render(
        request,
        "copilot/trace_conversation.html",
        {"conversation": conversation, "turns": turns, "owner_name": _owner_name(conversation)},
    )


@permission_required("supervise_conversations")
def trace_turn(request: HttpRequest, turn_id: str) -> HttpResponse:
    organisation = request.organisation  # type: ignore[attr-defined]
    try:
        turn = Turn.objects.select_related("message", "answer", "conversation", "user").get(
            pk=turn_id, organisation=organisation
        )
        get_conversation_for_user(request.user, turn.conversation_id)
    except (Turn.DoesNotExist, Conversation.DoesNotExist, ValidationError) as exc:
        raise Http404 from exc
    return render(request, "copilot/trace_turn.html", {"view": turn_view(turn)})
