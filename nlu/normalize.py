"""Text folding shared by the rules, the entity extractors and the classifier."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_WORD = re.compile(r"[a-z0-9ñ]+(?:'[a-z]+)?")


@lru_cache(maxsize=4096)
def fold(text: str) -> str:
    """Lowercase without accents ("Mañana, AGENDÁ" → "manana, agenda").

    Operators type with and without accents (and voseo moves the stress: "agendá"), so every
    comparison happens on folded text. The length can change (ligatures), so never use folded
    offsets to slice the original text; use `fold_keep_length` for that.
    """
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def fold_keep_length(text: str) -> str:
    """Like `fold` but one output character per input character, so offsets line up."""
    return "".join(_fold_char(ch) for ch in text)


@lru_cache(maxsize=1024)
def _fold_char(ch: str) -> str:
    folded = fold(ch)
    return folded if len(folded) == 1 else ch.lower()[:1] or ch


def words(text: str) -> list[str]:
    """Folded word tokens."""
    return _WORD.findall(fold(text))


def squash_spaces(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def word_set(text: str) -> frozenset[str]:
    """A set from whitespace-separated words (long word lists read better as text)."""
    return frozenset(text.split())
