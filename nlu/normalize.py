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


# A word said twice in a row, with at most a comma between: dictation's stutter ("the, the
# campaign", "que que", "el, el técnico"). Letters only: "10 10" may be two numbers.
_REPEATED = re.compile(r"\b([^\W\d_]+)(?:,\s*|\s+)\1\b", re.IGNORECASE)


def without_stutter(text: str) -> str:
    """The text with a word repeated right after itself said once ("uh let's kick off the, the
    campaign" → "uh let's kick off the campaign"): the comma between would otherwise cut the
    request in two."""
    previous = None
    while previous != text:
        previous, text = text, _REPEATED.sub(r"\1", text)
    return text
