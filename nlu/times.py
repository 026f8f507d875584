"""Explicit clock times in es/en text → "HH:MM" (24 h).

Only explicit times count: "10hs", "a las 10", "3pm", "15:30", "9 y media", "mediodía".
Day parts alone ("a la tarde", "in the morning") are not a time: `find_part_of_day` reads them
apart, for filtering free slots.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from common.text import fold_keep_length


@dataclass(frozen=True)
class TimeMention:
    start: int
    end: int
    value: str


_MINUTES = r"(?:[:.](?P<min>[0-5]\d))?"
_FRACTION = r"(?:\s+y\s+(?P<frac>media|cuarto)|\s+menos\s+(?P<less>cuarto))?"
_PART = (
    r"(?:\s*(?P<ampm>a\.?\s?m\.?|p\.?\s?m\.?)(?![a-z])"
    r"|\s+(?:de\s+la|in\s+the|por\s+la|at)\s+(?P<part>manana|tarde|noche|morning|afternoon|evening|night))?"
)
_UNIT = r"(?:\s*(?P<unit>hs|hrs|hr|h|horas|hours|o'?clock)\b\.?)?"
# Hours as a dictated message spells them (folded).
_HOUR_WORDS = {
    "una": 1, "dos": 2, "tres": 3, "cuatro": 4, "cinco": 5, "seis": 6, "siete": 7, "ocho": 8,
    "nueve": 9, "diez": 10, "once": 11, "doce": 12,
}  # fmt: skip
_PATTERNS = [
    # "a las 10", "a la 1 y media", "at 3", "tipo 10", "desde las 9"
    re.compile(
        r"\b(?:a\s+las?|a\s+eso\s+de\s+las?|tipo|desde\s+las?|para\s+las?|at|by|around|from)\s+"
        rf"(?P<hour>\d{{1,2}}){_MINUTES}{_FRACTION}{_UNIT}{_PART}(?![\d/])"
    ),
    # Dictated: "a las once", "a las cuatro de la tarde", "tipo nueve y media"
    re.compile(
        r"\b(?:a\s+las?|a\s+eso\s+de\s+las?|tipo|desde\s+las?|para\s+las?)\s+"
        rf"(?P<word>{'|'.join(_HOUR_WORDS)})\b{_FRACTION}{_UNIT}{_PART}"
    ),
    # "9 y media", "10 menos cuarto"
    re.compile(
        rf"(?<![\d/.,:$])(?P<hour>\d{{1,2}})(?=\s+(?:y|menos)\s+(?:media|cuarto)){_FRACTION}"
    ),
    # "15:30", "10.30hs", "3pm", "10 hs", "8 de la manana"
    re.compile(
        rf"(?<![\d/.,:$])(?P<hour>\d{{1,2}})(?:[:.](?P<min>[0-5]\d))?"
        rf"(?=\s*(?:hs|hrs|hr|h\b|o'?clock|a\.?\s?m|p\.?\s?m"
        rf"|de\s+la\s+(?:manana|tarde|noche)))"
        rf"{_UNIT}{_PART}"
    ),
    re.compile(rf"(?<![\d/.,:$])(?P<hour>\d{{1,2}})[:.](?P<min>[0-5]\d){_UNIT}{_PART}(?![\d/.])"),
]
# "después del mediodía" / "after noon" is a range, not a time.
_NAMED = re.compile(
    r"(?<!despues del )(?<!antes del )(?<!after )(?<!before )"
    r"\b(?:(?P<noon>mediodia|noon|midday)|(?P<midnight>medianoche|midnight))\b"
)


def _group(match: re.Match[str], name: str) -> str:
    return match.groupdict().get(name) or ""


def _to_24h(hour: int, minute: int, match: re.Match[str]) -> str | None:
    ampm = _group(match, "ampm").replace(".", "").replace(" ", "")
    part = _group(match, "part")
    if ampm == "pm" or part in ("tarde", "noche", "afternoon", "evening", "night"):
        hour = hour + 12 if hour < 12 else hour
    elif ampm == "am":
        hour = 0 if hour == 12 else hour
    elif not part and 1 <= hour <= 6:
        hour += 12  # field-service work: "a las 3" is the afternoon, never 3 a.m.
    if hour > 23 or minute > 59:
        return None
    return f"{hour:02d}:{minute:02d}"


def _from_match(match: re.Match[str]) -> str | None:
    hour = _HOUR_WORDS[match["word"]] if _group(match, "word") else int(match["hour"])
    minute = int(_group(match, "min") or 0)
    if _group(match, "frac"):
        minute = 30 if match["frac"] == "media" else 15
    if _group(match, "less"):
        hour, minute = hour - 1, 45
    return _to_24h(hour, minute, match)


def find_times(text: str) -> list[TimeMention]:
    """Explicit times in text order; overlapping matches keep the first (most specific) pattern."""
    folded = fold_keep_length(text)
    found: list[TimeMention] = []
    for pattern in _PATTERNS:
        for match in pattern.finditer(folded):
            value = _from_match(match)
            overlaps = any(t.start < match.end() and match.start() < t.end for t in found)
            if value and not overlaps:
                found.append(TimeMention(match.start(), match.end(), value))
    for match in _NAMED.finditer(folded):
        value = "12:00" if match["noon"] else "00:00"
        found.append(TimeMention(match.start(), match.end(), value))
    return sorted(found, key=lambda t: t.start)


# Parts of the day, as a filter on free slots: not a time (TAXONOMY: "a la tarde" has none).
# "mañana" alone is tomorrow and "buenas tardes" / "good morning" are greetings, so only a
# part introduced as one counts ("a la tarde", "por la mañana", "esta noche", "Friday morning").
_DAY_PARTS: dict[str, re.Pattern[str]] = {
    "morning": re.compile(
        r"\b(?:(?:a|por|de|en|durante)\s+la|esta)\s+(?:manana|mnna?)\b"
        r"|(?<!\bgood )\b(?:in\s+the\s+|this\s+|tomorrow\s+|\w+day\s+)?morning\b"
    ),
    "afternoon": re.compile(
        r"\b(?:(?:a|por|de|en|durante)\s+la|esta)\s+tarde\b|\bdespues\s+del\s+mediodia\b"
        r"|(?<!\bgood )\bafternoon\b"
    ),
    "evening": re.compile(
        r"\b(?:(?:a|por|de|en|durante)\s+la|esta)\s+noche\b"
        r"|(?<!\bgood )\b(?:evening|tonight)\b"
    ),
}


# A form's answer, one "field: value" line each (a WhatsApp flow's, whatsapp/replies.py): a field
# whose value is a part of the day ("franja: tarde", "turno: noche", "slot: morning"). A
# bare "mañana" is a part of the day only under a field that is not a date ("fecha: mañana").
# The lines may arrive joined ("franja: tarde equipos: split"): the value is the word after
# the field's colon, up to the next field.
_FIELD_PART = re.compile(
    r"(?P<field>\b\w+(?:[ \t]\w+){0,2}):[ \t]*(?:(?:a|por|de|en)\s+la\s+)?"
    r"(?P<part>manana|tarde|noche|morning|afternoon|evening)[ \t.]*"
    r"(?=$|\n|(?:\w+[ \t]){0,2}\w+:)"  # the value ends: the text, the line or the next field
)
_PART_WORDS = {"manana": "morning", "tarde": "afternoon", "noche": "evening"}
_DATE_FIELD = re.compile(r"\b(?:fecha|dia|cuando|date|day|when)\b")


def _field_parts(folded: str) -> set[str]:
    parts: set[str] = set()
    for match in _FIELD_PART.finditer(folded):
        word = match["part"]
        if word == "manana" and _DATE_FIELD.search(match["field"]):
            continue  # "fecha: mañana" is tomorrow
        parts.add(_PART_WORDS.get(word, word))
    return parts


def find_part_of_day(text: str) -> str | None:
    """ "morning", "afternoon" or "evening" when the text names exactly one of them."""
    folded = fold_keep_length(text)
    named = [part for part, pattern in _DAY_PARTS.items() if pattern.search(folded)]
    named = sorted(set(named) | _field_parts(folded))
    return named[0] if len(named) == 1 else None
