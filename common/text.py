"""Accent and case folding: the one implementation (plain Python, no Django: the NLU uses it).

Operators type with and without accents (and voseo moves the stress: "agendá"), so names,
places and commands are compared on folded text.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache


def strip_accents(text: str) -> str:
    """The text without its combining marks, case kept ("Martín" → "Martin")."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


# Cached: the NLU folds the same short texts many times per message.
@lru_cache(maxsize=8192)
def fold(text: str) -> str:
    """Lowercase without accents ("Mañana, AGENDÁ" → "manana, agenda").

    The length can change (casefold: "ß" → "ss"; compatibility forms: "ﬁ" → "fi"), so never use
    folded offsets to slice the original text; use `fold_keep_length` for that.
    """
    return strip_accents(text.casefold())


def fold_keep_length(text: str) -> str:
    """Like `fold` but one output character per input character, so offsets line up."""
    return "".join(_fold_char(ch) for ch in text)


@lru_cache(maxsize=1024)
def _fold_char(ch: str) -> str:
    folded = fold(ch)
    return folded if len(folded) == 1 else ch.lower()[:1] or ch
