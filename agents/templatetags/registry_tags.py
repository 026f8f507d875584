"""The registry's codes as people read them (issue 28.1): an intent by its phrase, a tool by its
label, in the active language; the code itself stays as the element's `title` for whoever needs
it (an admin matching a log line), never as the visible text.

    {% load registry_tags %}
    {{ case.expected_intents|intents_label }}   → agendar el trabajo → cancelar el trabajo
    {{ row.tool|tool_label }}                   → Cancelar un trabajo abierto (necesita …)
    {{ row.name|tool_description }}             → …; dry_run=false lo aplica… (`dry_run` as code)
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from django import template
from django.utils.html import escape, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import capfirst
from django.utils.translation import get_language

from agents import errors
from agents.defaults import intent_phrase
from agents.models import Agent
from agents.registry import Category, Tool, all_tools

register = template.Library()


@register.filter
def intent_label(name: object) -> SafeString | str:
    """The intent's phrase ("agendar el trabajo"), its name as the title; "" stays ""."""
    code = str(name or "")
    if not code:
        return ""
    phrase = intent_phrase(code, (get_language() or "es")[:2])
    return format_html('<span title="{}">{}</span>', code, capfirst(phrase))


@register.filter
def intents_label(names: object, separator: str = " → ") -> SafeString | str:
    """A chain of intents, each by its phrase."""
    if not isinstance(names, Iterable) or isinstance(names, str | bytes):
        return intent_label(names)
    labels = [intent_label(name) for name in names if name]
    return format_html_join(separator, "{}", ((label,) for label in labels))


@register.filter
def tool_label(name: object) -> SafeString | str:
    """The tool as a person names it: its label's first sentence in the reader's language ("Cancelar
    un trabajo abierto (necesita la aprobación de un gerente)."), its name as the title; a name the
    registry no longer has is shown as code."""
    code = str(name or "")
    if not code:
        return ""
    tool = _tool(code)
    if tool is None:
        return format_html("<code>{}</code>", code)
    return format_html('<span title="{}">{}</span>', code, _parameters_as_code(tool, tool.headline))


@register.filter
def tool_description(name: object) -> SafeString | str:
    """The tool's whole label in the reader's language, the parameters it names (`dry_run`) as
    code: a parameter is what the model types, not a word of the sentence."""
    tool = _tool(str(name or ""))
    if tool is None:
        return ""
    return _parameters_as_code(tool, tool.label)


def _tool(code: str) -> Tool | None:
    return next((t for t in all_tools() if t.name == code), None) if code else None


def _parameters_as_code(tool: Tool, text: str) -> SafeString:
    names = [n for n in (tool.parameters.get("properties") or {}) if "_" in n]
    escaped = escape(text)
    if not names:
        return escaped
    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in names) + r")\b")
    return mark_safe(pattern.sub(r"<code>\1</code>", escaped))  # noqa: S308 - escaped above


@register.filter
def error_words(code: object) -> SafeString | str:
    """A stored error code in the reader's language (agents/errors.py) — the code itself is
    English, so it is not kept as a title either; one the table does not know is shown as
    code."""
    text = str(code or "")
    if not text:
        return ""
    words = errors.in_words(text)
    if words is None:
        return format_html("<code>{}</code>", text)
    return words


@register.filter
def agent_named(name: object, organisation_id: int) -> SafeString | str:
    """The organisation's agent by its label in the reader's language, its name as the title; an
    agent the organisation no longer has is shown as code."""
    code = str(name or "")
    if not code:
        return ""
    agent = Agent.objects.filter(organisation_id=organisation_id, name=code).first()
    if agent is None:
        return format_html("<code>{}</code>", code)
    return format_html('<span title="{}">{}</span>', code, agent.label(get_language() or "es"))


@register.filter
def category_label(code: object) -> SafeString | str:
    """A tool category by its label ("ejecuta"), the code as the title."""
    value = str(code or "")
    if value not in set(Category):
        return format_html("<code>{}</code>", value) if value else ""
    return format_html('<span title="{}">{}</span>', value, Category(value).label)
