"""The CopilotPanel's side pieces (S1): the record under discussion, the actions under an answer
(open, approve or reject inline, undo, copy) — each a small htmx partial.

Every view reads the conversation through `get_conversation_for_user` (another organisation's,
or a colleague's, is a 404) and held actions through the organisation's selector.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from approvals.models import PendingAction
from approvals.selectors import action_for_org
from approvals.services import action_decide
from business.roles import permission_required
from copilot import panel, tasks
from copilot.models import Conversation, Message
from copilot.selectors import get_conversation_for_user

REASON_MAX = 500


def _conversation(request: HttpRequest, conversation_id: int) -> tuple[Conversation, bool]:
    try:
        conversation, read_only = get_conversation_for_user(request.user, conversation_id)
    except Conversation.DoesNotExist as exc:
        raise Http404 from exc
    if conversation.organisation_id != request.organisation.pk:  # type: ignore[attr-defined]
        raise Http404
    return conversation, read_only


def _language(request: HttpRequest) -> str:
    return str(getattr(request, "LANGUAGE_CODE", "es"))[:2]


@require_GET
@permission_required("chat")
def chat_context(request: HttpRequest, conversation_id: int) -> HttpResponse:
    """The customer or job under discussion, as the conversation's state has it now."""
    conversation, _read_only = _conversation(request, conversation_id)
    context = {"conversation": conversation, "subject": panel.subject_for(conversation)}
    return render(request, "copilot/_context_panel.html", context)


def _answer(conversation: Conversation, message_id: int) -> Message:
    message = conversation.messages.filter(pk=message_id, role=Message.Role.ASSISTANT).first()
    if message is None:
        raise Http404
    return message


def _actions_response(
    request: HttpRequest,
    conversation: Conversation,
    read_only: bool,
    message: Message,
    *,
    note: str = "",
    level: str = "success",
    status: int = 200,
) -> HttpResponse:
    found = panel.answer_actions(
        conversation, [message], user=request.user,
        membership=getattr(request, "membership", None), language=_language(request),
    )  # fmt: skip
    context = {
        "conversation": conversation, "message": message, "read_only": read_only,
        "actions": found.get(message.pk), "note": note, "level": level,
    }  # fmt: skip
    return render(request, "copilot/_answer_actions.html", context, status=status)


@require_GET
@permission_required("chat")
def answer_actions(request: HttpRequest, conversation_id: int, message_id: int) -> HttpResponse:
    """The actions under one answer (the panel loads them when a live answer completes)."""
    conversation, read_only = _conversation(request, conversation_id)
    return _actions_response(request, conversation, read_only, _answer(conversation, message_id))


_UNDO_REFUSALS = {
    "not_author": 403,
    "nothing_to_undo": 409,
    "already": 409,
}


@require_POST
@permission_required("chat")
def answer_undo(request: HttpRequest, conversation_id: int, message_id: int) -> HttpResponse:
    """Undo an answer's booking: a new turn of this conversation cancels it through the tools
    and the approval gate. The author only, once."""
    conversation, read_only = _conversation(request, conversation_id)
    message = _answer(conversation, message_id)
    language = _language(request)
    try:
        if read_only:
            raise panel.UndoRefused("not_author")
        asked = panel.undo_request(conversation, message, user=request.user, language=language)
    except panel.UndoRefused as refused:
        notes = {
            "not_author": _("Only the person who asked for it can undo this."),
            "nothing_to_undo": _("There is nothing left to undo here."),
            "already": _("The undo was already asked for."),
        }
        return _actions_response(
            request, conversation, read_only, message, note=notes[refused.code],
            level="warning", status=_UNDO_REFUSALS[refused.code],
        )  # fmt: skip
    transaction.on_commit(lambda: tasks.dispatch(asked.organisation_id, asked.conversation_id))
    note = _("Undo asked for: job #%(id)s is being cancelled (a manager may need to approve).") % {
        "id": asked.job_id
    }
    if not request.htmx:  # type: ignore[attr-defined]
        return HttpResponseRedirect(reverse("chat_detail", args=[conversation.pk]))
    return _actions_response(request, conversation, read_only, message, note=note)


def _action(request: HttpRequest, action_id: int) -> PendingAction:
    action = action_for_org(request.organisation, action_id)  # type: ignore[attr-defined]
    if action is None:
        raise Http404
    return action


def _card(
    request: HttpRequest, action: PendingAction, note: str = "", level: str = "success"
) -> HttpResponse:
    card = panel.approval_card(action, getattr(request, "membership", None), _language(request))
    return render(
        request, "copilot/_approval_card.html", {"card": card, "note": note, "level": level}
    )


@require_GET
@permission_required("chat")
def approval_card(request: HttpRequest, action_id: int) -> HttpResponse:
    """One held action as the chat shows it (reloaded when a decision arrives)."""
    return _card(request, _action(request, action_id))


@require_POST
@permission_required("chat")
def approval_decide(request: HttpRequest, action_id: int) -> HttpResponse:
    """Approve or reject from the card in the chat: the queue's service, so a double click or
    two managers end with one decision and a clear message for the other. An operator's post is
    refused by the same service (and audited)."""
    action = _action(request, action_id)
    choice = request.POST.get("decision", "")
    if choice not in ("approve", "reject"):
        return _card(request, action, _("Choose approve or reject."), "warning")
    reason = request.POST.get("reason", "").replace("\x00", "").strip()[:REASON_MAX]
    decided = action_decide(
        organisation_id=action.organisation_id, action_id=action.pk,
        actor=request.user,  # type: ignore[arg-type]
        approve=choice == "approve", reason=reason,
    )  # fmt: skip
    action.refresh_from_db()
    note = _decision_note(decided.code, action)
    if not request.htmx:  # type: ignore[attr-defined]
        target = (
            reverse("chat_detail", args=[action.conversation_id])
            if action.conversation_id
            else reverse("approvals")
        )
        return HttpResponseRedirect(target)
    return _card(request, action, note, "success" if decided.ok else "warning")


def _decision_note(code: str, action: PendingAction) -> str:
    number: dict[str, Any] = {"id": action.pk}
    if code == "approved":
        return _("Approved: action #%(id)s runs now.") % number
    if code == "rejected":
        return _("Rejected: action #%(id)s will not run.") % number
    if code == "expired":
        return _("Action #%(id)s expired before your decision: it will not run.") % number
    if code == "forbidden":
        return _("Your role cannot decide action #%(id)s.") % number
    decider = action.decided_by
    who = (decider.get_full_name() or decider.get_username()) if decider else _("someone else")
    return _("Action #%(id)s was already decided by %(who)s: %(status)s.") % {
        "id": action.pk, "who": who, "status": action.get_status_display(),
    }  # fmt: skip
