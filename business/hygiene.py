"""Text that can be stored: every entry (chat, forms, search, webhooks) checks it first.

PostgreSQL refuses a NUL character in text, and a lone UTF-16 surrogate ("\\ud800", which JSON can
carry) cannot be encoded at all; either one used to surface as an internal error after the fact.
"""

from __future__ import annotations

import re

_NUL = "\x00"
_SURROGATE = re.compile("[\ud800-\udfff]")


def text_problem(text: str) -> str | None:
    """ "nul" or "surrogate" when the text cannot be stored as it is; None when it can."""
    if _NUL in text:
        return "nul"
    if _SURROGATE.search(text):
        return "surrogate"
    return None


def value_problem(value: object) -> str | None:
    """`text_problem` of any text inside a value (a JSON field's lists and objects included)."""
    if isinstance(value, str):
        return text_problem(value)
    if isinstance(value, dict):
        value = [*value.keys(), *value.values()]
    if isinstance(value, list | tuple):
        return next((p for p in map(value_problem, value) if p is not None), None)
    return None
