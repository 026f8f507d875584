"""WhatsApp conversations in the panel (issue 14.3): a member takes one over ("humano" mode),
replies as themselves and hands it back. Forms that work without JavaScript (a redirect back to
the conversation) and with htmx (the controls swapped in place).

Every view reads the conversation through `get_conversation_for_user` (another organisation's,
or one that is not a WhatsApp conversation, is a 404)."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_POST

from business.hygiene import text_problem
from business.roles import permission_required
from copilot.models import Conversation
from copilot.selectors import get_conversation_for_user
from whatsapp import humans as humans


def _whatsapp(request: HttpRequest, conversation_id: int) -> Conversation:
    try:
        conversation, _read_only = get_conversation_for_user(request.user, conversation_id)
    except Conversation.DoesNotExist as exc:
        raise Http404 from exc
    if conversation.channel != Conversation.Channel.WHATSAPP:
        raise Http404
    return conversation


def _done(request: HttpRequest, conversation: Conversation, error: str = "") -> HttpResponse:
    if request.headers.get("HX-Request"):
        conversation.refresh_from_db()
        context = {"conversation": conversation, "whatsapp_error": error,
                   "max_chars": settings.COPILOT_MAX_MESSAGE_CHARS}  # fmt: skip
        return render(
            request, "copilot/_whatsapp_controls.html", context, status=400 if error else 200
        )
    if error:
        return HttpResponse(error, status=400, content_type="text/plain; charset=utf-8")
    return redirect("chat_detail", conversation_id=conversation.pk)


@require_POST
@permission_required("chat")
def take_over(request: HttpRequest, conversation_id: int) -> HttpResponse:
    conversation = _whatsapp(request, conversation_id)
    humans.take_over(conversation, request.user)  # type: ignore[arg-type]
    return _done(request, conversation)


@require_POST
@permission_required("chat")
def hand_back(request: HttpRequest, conversation_id: int) -> HttpResponse:
    conversation = _whatsapp(request, conversation_id)
    if conversation.mode != Conversation.Mode.HUMAN:
        return _done(request, conversation, gettext("The copilot already answers it."))
    humans.hand_back(conversation, request.user)  # type: ignore[arg-type]
    return _done(request, conversation)


@require_POST
@permission_required("chat")
def reply(request: HttpRequest, conversation_id: int) -> HttpResponse:
    conversation = _whatsapp(request, conversation_id)
    text = (request.POST.get("text") or "").strip()
    if not text:
        return _done(request, conversation, gettext("Write the reply first."))
    if len(text) > settings.COPILOT_MAX_MESSAGE_CHARS or text_problem(text) is not None:
        refused = gettext("That reply cannot be sent: too long or with invalid characters.")
        return _done(request, conversation, refused)
    try:
        humans.operator_reply(conversation, request.user, text)  # type: ignore[arg-type]
    except humans.NotYours:
        return HttpResponse(
            gettext("Take the conversation over first."), status=403,
            content_type="text/plain; charset=utf-8",
        )  # fmt: skip
    return _done(request, conversation)
