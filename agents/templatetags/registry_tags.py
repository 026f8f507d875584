"""The registry's codes as people read them (issue 28.1): an intent by its phrase, a tool by its
label, in the active language; the code itself stays as the element's `title` for whoever needs
it (an admin matching a log line), never as the visible text.

    {% load registry_tags %}
    {{ case.expected_intents|intents_label }}   → agendar el trabajo → cancelar el trabajo
    {{ row.tool|tool_label }}
"""

from __future__ import annotations

from collections.abc import Iterable

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.text import capfirst
from django.utils.translation import get_language

from agents.defaults import intent_phrase
from agents.registry import all_tools

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
    """The tool's label in the reader's language (its description), its name as the title; a
    name the registry no longer has is shown as code."""
    code = str(name or "")
    if not code:
        return ""
    tool = next((t for t in all_tools() if t.name == code), None)
    if tool is None:
        return format_html("<code>{}</code>", code)
    return format_html('<span title="{}">{}</span>', code, tool.label)
