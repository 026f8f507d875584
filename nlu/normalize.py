"""Word helpers shared by the rules, the entity extractors and the classifier, on folded text
(the folding itself is `common.text`)."""

from __future__ import annotations

import re

from common.text import fold

_WORD = re.compile(r"[a-z0-9ñ]+(?:'[a-z]+)?")


def words(text: str) -> list[str]:
    """Folded word tokens."""
    return _WORD.findall(fold(text))


def squash_spaces(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def word_set(text: str) -> frozenset[str]:
    """A set from whitespace-separated words (long word lists read better as text)."""
    return frozenset(text.split())
