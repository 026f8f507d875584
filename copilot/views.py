"""The CopilotPanel pages: the conversation list, a new conversation, one conversation."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from business.roles import permission_required
from copilot.models import Conversation
from copilot.selectors import conversations_for_user, get_conversation_for_user, replay_from
from copilot.services import conversation_create


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
    }
    return render(request, "copilot/chat.html", context)


def _owner_name(conversation: Conversation) -> str:
    """Whose conversation it is, for the supervision banner: the member, or else its channel."""
    owner = conversation.user
    if owner is None:
        return str(conversation.get_channel_display())
    return owner.get_full_name() or owner.get_username()
