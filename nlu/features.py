"""Text → the string the classifier vectorises.

Folded (lowercase, no accents), with the *values* the operator typed replaced by placeholder words:
a date, a time, an amount, a CUIT or a phone number carries the same meaning whatever its digits,
so "agendá el 15/12 a las 10" and "agendá mañana 9hs" share features. Shouting and "!!!" become
words too, because they are the main cue for frustration; names inside a sentence become "zname".
"""

from __future__ import annotations

import re

from common.text import fold
from nlu.amounts import _THOUSANDS, _WITH_CURRENCY, _WITH_MULTIPLIER
from nlu.cuit import _DOTTED_CUIT, CUIT_IN_TEXT
from nlu.dates import _DAY_MONTH_RE, _ISO_RE, _MONTH_DAY_RE, _NUMERIC_RE
from nlu.name_words import HONORIFICS, NOT_NAME

_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_PHONE = re.compile(r"(?<!\w)(?:\+?\d[\d\s-]{6,}\d)(?!\w)")
_TIME = re.compile(
    r"\b\d{1,2}(?:[:.][0-5]\d)?\s*(?:hs|hrs|h|horas|am|pm|a\.m\.|p\.m\.)(?!\w)|\b\d{1,2}:[0-5]\d\b"
)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# Order matters: the longest, most specific shapes first.
_SUBSTITUTIONS: list[tuple[re.Pattern[str], str]] = [
    (_EMAIL, " zemail "),
    (CUIT_IN_TEXT, " zcuit "),
    (_DOTTED_CUIT, " zcuit "),
    (_ISO_RE, " zfecha "),
    (_NUMERIC_RE, " zfecha "),
    (_DAY_MONTH_RE, " zfecha "),
    (_MONTH_DAY_RE, " zfecha "),
    (_WITH_MULTIPLIER, " zmonto "),
    (_WITH_CURRENCY, " zmonto "),
    (_TIME, " zhora "),
    (_THOUSANDS, " zmonto "),
    (_PHONE, " ztel "),
    (_NUMBER, " znum "),
]
# Every word featurize puts in place of something (the classifier never mends these).
PLACEHOLDERS = frozenset(
    {placeholder.strip() for _, placeholder in _SUBSTITUTIONS} | {"zname", "zgritos", "zexclama"}
)
_LETTERS = re.compile(r"[^\W\d_]")


def _shouting(text: str) -> bool:
    letters = _LETTERS.findall(text)
    upper = sum(ch.isupper() for ch in letters)
    return len(letters) >= 8 and upper / len(letters) >= 0.6


# A capitalised word that does not start a sentence (the start is ambiguous: "Agendá", "Ramón").
_CAPITALISED = re.compile(r"(?<![.!?¿¡]\s)(?<!^)\b[A-ZÁÉÍÓÚÑ][\w'’]+")


def _mask_names(text: str) -> str:
    """Names become one word: which customer or technician is named says nothing about the
    intent, and the registry's examples name only a few (measured: +2 golden chains, 0 lost on
    the held-out check, no cost on the public sets, which are lowercase)."""

    def swap(match: re.Match[str]) -> str:
        word = fold(match[0])
        return match[0] if word in NOT_NAME or word in HONORIFICS or match[0].isupper() else "zname"

    return _CAPITALISED.sub(swap, text)


def featurize(text: str) -> str:
    """The classifier's view of a text (see the module docstring)."""
    text = _mask_names(text)
    marks = []
    if _shouting(text):
        marks.append("zgritos")
    if re.search(r"[!?]{2,}|¡{2,}", text):
        marks.append("zexclama")
    folded = fold(text)
    for pattern, placeholder in _SUBSTITUTIONS:
        folded = pattern.sub(placeholder, folded)
    folded = re.sub(r"[^\w\s]", " ", folded)
    return " ".join([*folded.split(), *marks])
