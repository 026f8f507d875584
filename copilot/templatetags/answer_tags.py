"""Template helpers of an answer: its Markdown, its record chips, its steps' durations."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.formats import number_format
from django.utils.safestring import SafeString
from django.utils.translation import gettext

from copilot import answers
from nlu.language import detect_language

register = template.Library()


@register.filter
def answer_markdown(text: str | None, steps: Any = None) -> SafeString:
    """The answer's text as HTML; the records of its `steps` (answers.Steps) name its PDF links.
    Steps, not their records, are the argument: a filter's argument must resolve, and an
    answer stored without steps has none."""
    records = steps.get("records") if isinstance(steps, dict) else None
    refs = [r for r in records if isinstance(r, dict)] if isinstance(records, list) else []
    return answers.render_answer(text or "", refs)


@register.filter
def chip_url(ref: Any) -> str:
    return answers.chip_url(ref) if isinstance(ref, dict) else ""


@register.filter
def chip_kind(kind: str) -> str:
    """The chip's kind in words (its title and what a screen reader says before the label)."""
    names = {
        "job": gettext("Job"),
        "customer": gettext("Customer"),
        "quote": gettext("Quote"),
        "invoice": gettext("Invoice"),
        "ticket": gettext("Ticket"),
        "approval": gettext("Approval"),
    }
    return names.get(kind, kind)


@register.filter
def duration(ms: Any) -> str:
    """ "35 ms", "1,2 s": a step's wall time, short."""
    if not isinstance(ms, int | float) or isinstance(ms, bool):
        return ""
    if ms < 1000:
        return gettext("%(ms)s ms") % {"ms": max(1, round(ms))}
    seconds = number_format(ms / 1000, 1)  # "1,2" in Spanish
    return gettext("%(seconds)s s") % {"seconds": seconds}


@register.filter
def steps_total_ms(steps: Any) -> float | None:
    agents = steps.get("agents") if isinstance(steps, dict) else None
    times = [a.get("ms") for a in agents or [] if isinstance(a, dict)]
    numbers = [t for t in times if isinstance(t, int | float) and not isinstance(t, bool)]
    return sum(numbers) if numbers else None


@register.filter
def steps_tool_count(steps: Any) -> int:
    agents = steps.get("agents") if isinstance(steps, dict) else None
    return sum(len(a.get("tools") or []) for a in agents or [] if isinstance(a, dict))


@register.filter
def steps_need_eyes(steps: Any) -> bool:
    """The block opens by itself when something waits for a manager or did not work."""
    agents = steps.get("agents") if isinstance(steps, dict) else None
    for agent in agents or []:
        if not isinstance(agent, dict):
            continue
        if agent.get("approvals") or any(t.get("ok") is False for t in agent.get("tools") or []):
            return True
    return False


@register.filter
def agent_label(name: str, consultable: Any) -> str:
    """The agent's label in the screen's language, from the page's (name, label) pairs; "" for an
    agent not among them (the caller shows the label recorded with the answer)."""
    return next((label for agent, label in consultable or () if agent == name), "")


@register.filter
def text_lang(text: str | None) -> str:
    """ "es" or "en": the language a text someone wrote is in (a conversation's title, taken
    from its first message), for its `lang` attribute on a screen in another language."""
    return detect_language(text or "")
