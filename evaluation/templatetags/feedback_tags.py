"""The panel's feedback buttons (V5): `{% answer_feedback message %}` under each stored answer and
`{% feedback_template %}` once, which static/js/feedback.js copies under answers that arrive
live. The copilot's templates load this library; its code does not import the evaluation app
(a floor above it)."""

from __future__ import annotations

from typing import Any

from django import template
from django.template.context import Context

from agents.models import Agent
from evaluation.models import Feedback

register = template.Library()


def _agents(context: Context) -> list[tuple[str, str]]:
    cache = context.render_context
    if "feedback_agents" not in cache:
        organisation = context.get("organisation")
        language = str(context.get("LANGUAGE_CODE") or "es")
        cache["feedback_agents"] = (
            [(a.name, a.label(language))
             for a in Agent.objects.filter(organisation=organisation, enabled=True)]
            if organisation is not None
            else []
        )  # fmt: skip
    return list(cache["feedback_agents"])


def _mine(context: Context, conversation_id: int) -> dict[int, Feedback]:
    cache = context.render_context
    key = f"feedback_mine_{conversation_id}"
    if key not in cache:
        request = context.get("request")
        user = getattr(request, "user", None)
        cache[key] = (
            {f.message_id: f for f in Feedback.objects.filter(
                message__conversation_id=conversation_id, user_id=user.pk)}
            if user is not None and user.is_authenticated
            else {}
        )  # fmt: skip
    return dict(cache[key])


@register.inclusion_tag("evaluation/_feedback.html", takes_context=True)
def answer_feedback(context: Context, message: Any) -> dict[str, Any]:
    return {
        "message": message,
        "feedback": _mine(context, message.conversation_id).get(message.pk),
        "feedback_agents": _agents(context),
    }


@register.inclusion_tag("evaluation/_feedback_template.html", takes_context=True)
def feedback_template(context: Context) -> dict[str, Any]:
    return {"feedback_agents": _agents(context), "placeholder": {"pk": 0}}
