"""Which of the offered options a reply picks: "el segundo", "1", "the last one", "dale, el de
las 11 con Lucas", "ver la disponibilidad" (a reading's own words).

An option is one line of a list in the copilot's previous answer ("1. viernes 04/12 11:00 con
Diego Fernández", "- #12 …"). A reply picks by place (ordinal or bare number), else by the
option whose line holds most of the reply's words and times; a tie picks nothing (the caller
asks again or reads the reply on its own).
"""

from __future__ import annotations

import re

from common.text import fold
from nlu.normalize import word_set, words

_LINE = re.compile(r"^\s*(?:[-•*]|\d+[.)])\s+(.+)$", re.MULTILINE)
_PLACES = {
    **dict.fromkeys(("primero", "primera", "primer", "1ro", "1ero", "first", "1st"), 0),
    **dict.fromkeys(("segundo", "segunda", "2do", "second", "2nd"), 1),
    **dict.fromkeys(("tercero", "tercera", "tercer", "3ro", "third", "3rd"), 2),
    **dict.fromkeys(("cuarto", "cuarta", "4to", "fourth", "4th"), 3),
    **dict.fromkeys(("quinto", "quinta", "5to", "fifth", "5th"), 4),
    **dict.fromkeys(("ultimo", "ultima", "last"), -1),
}
# Words that say nothing about which option ("dale, el de las 11" keeps "11").
_EMPTY = word_set(
    """el la los las lo de del con a al en y que dale si ok bueno esa ese esta este uno una opcion
    option numero number the one a an at with for on please porfa mejor va ir"""
)
_CLOCK = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*(?:hs|h|am|pm)?\b")


def option_lines(text: str) -> list[str]:
    """The listed options of a message, as written, in order; [] when it lists none."""
    return [line.strip() for line in _LINE.findall(text)]


def pick(reply: str, options: list[str]) -> int | None:
    """The index of the option the reply picks, or None."""
    if not options:
        return None
    tokens = words(reply)
    for token in tokens:
        if token in _PLACES:
            place = _PLACES[token]
            return place % len(options) if place < len(options) else None
    content = [t for t in tokens if t not in _EMPTY]
    if len(content) == 1 and content[0].isdigit() and 1 <= int(content[0]) <= len(options):
        return int(content[0]) - 1
    return _best_match(content, [fold(option) for option in options])


def _best_match(content: list[str], options: list[str]) -> int | None:
    scores = [_overlap(content, option) for option in options]
    best = max(scores)
    if best <= 0 or scores.count(best) > 1:
        return None
    return scores.index(best)


def _overlap(content: list[str], option: str) -> int:
    score = 0
    for token in content:
        if token.isdigit() and len(token) <= 2:  # "las 11" names "11:00"
            score += 2 * bool(
                re.search(rf"(?<!\d){int(token):02d}:\d\d|(?<![\d:]){token}:\d\d", option)
            )
        elif len(token) >= 3 and re.search(rf"(?<!\w){re.escape(token)}", option):
            score += 1
    return score
