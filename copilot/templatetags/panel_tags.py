"""`{% answer_actions_for message %}`: the actions under a stored answer on the chat page, worked
out once for every answer of the page (copilot/panel.py), not per message."""

from __future__ import annotations

from typing import Any

from django import template

from copilot import panel
from copilot.models import Message

register = template.Library()

_CACHE = "_panel_answer_actions"


@register.inclusion_tag("copilot/_answer_actions.html", takes_context=True)
def answer_actions_for(context: template.Context, message: Message) -> dict[str, Any]:
    request = context.get("request")
    conversation = context.get("conversation")
    found: dict[int, panel.AnswerActions] | None = getattr(request, _CACHE, None)
    if found is None and conversation is not None and request is not None:
        shown = context.get("chat_messages") or []
        answers = [m for m in shown if m.role == Message.Role.ASSISTANT]
        found = panel.answer_actions(
            conversation, answers, user=request.user,
            membership=getattr(request, "membership", None),
            language=str(getattr(request, "LANGUAGE_CODE", "es"))[:2],
        )  # fmt: skip
        setattr(request, _CACHE, found)
    return {
        "request": request,
        "csrf_token": context.get("csrf_token"),
        "conversation": conversation,
        "message": message,
        "read_only": context.get("read_only", False),
        "actions": (found or {}).get(message.pk),
    }
