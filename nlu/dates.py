"""Dates in free es/en text, resolved against the organisation's "today".

Every finder works on folded text (lowercase, no accents) and returns `Mention`s with their
offsets, so the entity extractor can blank them out before looking for times and amounts, and can
prefer the *target* date of a move ("del lunes al jueves" → jueves).
"""

from __future__ import annotations

import calendar
import datetime
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from common.text import fold_keep_length


@dataclass(frozen=True)
class Mention:
    start: int
    end: int
    value: datetime.date


WEEKDAYS: dict[str, int] = {
    "lunes": 0, "martes": 1, "miercoles": 2, "jueves": 3, "viernes": 4, "sabado": 5, "domingo": 6,
    "monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5,
    "sunday": 6, "mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3,
    "fri": 4,
}  # fmt: skip
MONTHS: dict[str, int] = {
    "enero": 1, "febrero": 2, "marzo": 3, "abril": 4, "mayo": 5, "junio": 6, "julio": 7,
    "agosto": 8, "septiembre": 9, "setiembre": 9, "octubre": 10, "noviembre": 11,
    "diciembre": 12, "ene": 1, "feb": 2, "abr": 4, "jun": 6, "jul": 7, "ago": 8, "sep": 9,
    "sept": 9, "set": 9, "oct": 10, "nov": 11, "dic": 12,
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12, "jan": 1,
    "mar": 3, "apr": 4, "aug": 8, "dec": 12,
}  # fmt: skip
_NUMBER_WORDS = {"un": 1, "una": 1, "uno": 1, "a": 1, "an": 1, "one": 1, "dos": 2, "two": 2,
                 "tres": 3, "three": 3, "cuatro": 4, "four": 4, "cinco": 5, "five": 5}  # fmt: skip

_WD = "|".join(sorted(WEEKDAYS, key=len, reverse=True))
_MO = "|".join(sorted(MONTHS, key=len, reverse=True))
_ORD = r"(?:st|nd|rd|th|ro|do|vo|mo)?"
_NEXT_WEEK = r"(?:de\s+la\s+semana\s+que\s+viene|de\s+la\s+proxima\s+semana|next\s+week)"
_WEEKDAY_RE = re.compile(
    rf"\b(?P<q>(?:el\s+)?(?:proximo|este|next|this|on|el|la)\s+)?(?P<wd>{_WD})\b\.?"
    rf"(?P<qq>\s+(?:que\s+viene|proximo|{_NEXT_WEEK}))?"
    rf"(?:,?\s+(?:the\s+)?(?P<day>\d{{1,2}}){_ORD}\b(?!\s*(?:/|:|hs|h\b|am|pm|de\s+la)))?"
)
_NUMERIC_RE = re.compile(r"(?<![\d/.,:$])(\d{1,2})/(\d{1,2})(?:/(\d{4}|\d{2}))?(?![\d/])")
_NUMERIC_FOLLOWS = re.compile(r"\s*,?\s*\d{1,2}/\d{1,2}")
# "Monday, December 7", "el lunes diciembre 7": the weekday names the date written after it.
_MONTH_FOLLOWS = re.compile(rf"\s*,?\s*(?:{_MO})\.?\s+\d{{1,2}}")
_ISO_RE = re.compile(r"\b(20\d\d)-(\d{2})-(\d{2})\b")
_DAY_MONTH_RE = re.compile(
    rf"\b(\d{{1,2}}){_ORD}\s+(?:de\s+|of\s+)?({_MO})\b\.?(?:,?\s+(?:de\s+|del\s+)?(\d{{4}}))?"
)
_MONTH_DAY_RE = re.compile(rf"\b({_MO})\.?\s+(\d{{1,2}}){_ORD}\b(?!:)(?:,?\s+(\d{{4}}))?")
_DAY_ONLY_RE = re.compile(
    rf"\b(?:el\s+dia|the|(?:para\s+)?el|del|al)\s+(\d{{1,2}}){_ORD}\b"
    rf"(?!\s*(?:/|:|[.,]\d|hs|h\b|am|pm|%|°|º|de\s+(?:la|{_MO})\b|horas|hours|minutos|min\b|dias|"
    r"days|anos|years|pesos|lucas|mil\b|k\b|equipos|personas|people|veces|times|units|unidades|"
    r"metros|m2|kg|litros|splits|aires))"
)
_RELATIVE_RE = re.compile(
    r"\b(?:en|dentro\s+de|in)\s+(\d{1,2}|un|una|dos|tres|cuatro|cinco|a|an|one|two|three|four"
    r"|five)\s+(dias?|semanas?|days?|weeks?)\b"
)
_TARGET_BEFORE = re.compile(
    r"(?:\b(?:al|a|para|hacia|hasta|to|for|until|till|into|pasalo|pasala|pasalos|pasalas)"
    r"(?:\s+(?:el|la|the|on|el\s+dia))?\s*)$"
)
_UNTIL_BEFORE = re.compile(r"\b(?:hasta|until|till)\s+(?:el\s+|la\s+|the\s+)?$")
_SOURCE_BEFORE = re.compile(r"(?:\b(?:del|de|from|desde)(?:\s+(?:el|the|hoy))?\s*)$")


def _words_re(pattern: str) -> re.Pattern[str]:
    return re.compile(rf"\b(?:{pattern})\b")


_FIXED: list[tuple[re.Pattern[str], int]] = [
    (_words_re(r"pasado\s+manana|day\s+after\s+tomorrow|(?<=para\s)pasado|(?<=al\s)pasado"), 2),
    (_words_re(r"anteayer|antes\s+de\s+ayer|day\s+before\s+yesterday"), -2),
    # Typed fast: "mñn"/"mñna" (folded "mnn"), "tmrw".
    (
        re.compile(
            r"(?<!\bla )(?<!\besta )(?<!\bpasado )\b(?:manana|mnna?|maniana)\b"
            r"|\b(?:tomorrow|tmrw|tmw|2morrow)\b"
        ),
        1,
    ),  # fmt: skip
    (_words_re(r"hoy|today|tonight|esta\s+(?:noche|tarde|manana)|this\s+(?:morning|afternoon)"), 0),
    (_words_re(r"(?<!antes de )ayer|yesterday"), -1),
]


def _fixed(text: str, today: datetime.date) -> Iterator[Mention]:
    taken: list[tuple[int, int]] = []
    for pattern, offset in _FIXED:
        for m in pattern.finditer(text):
            if any(s <= m.start() < e for s, e in taken):
                continue  # "pasado mañana" already consumed this "mañana"
            taken.append(m.span())
            yield Mention(m.start(), m.end(), today + datetime.timedelta(days=offset))


def _next_weekday(today: datetime.date, weekday: int, *, include_today: bool) -> datetime.date:
    ahead = (weekday - today.weekday()) % 7
    if ahead == 0 and not include_today:
        ahead = 7
    return today + datetime.timedelta(days=ahead)


def _weekday_with_day(today: datetime.date, weekday: int, day: int) -> datetime.date | None:
    """The first date from today on that is both that weekday and that day of the month."""
    for offset in range(0, 400):
        candidate = today + datetime.timedelta(days=offset)
        if candidate.day == day and candidate.weekday() == weekday:
            return candidate
    return _next_day_of_month(today, day)


def _weekdays(text: str, today: datetime.date) -> Iterator[Mention]:
    for m in _WEEKDAY_RE.finditer(text):
        if _NUMERIC_FOLLOWS.match(text, m.end()) or _MONTH_FOLLOWS.match(text, m.end()):
            continue  # "el lunes 23/11", "Monday, December 7": the explicit date wins
        weekday = WEEKDAYS[m["wd"]]
        qualifier = (m["q"] or "").strip()
        after = (m["qq"] or "").strip()
        if m["day"]:
            value = _weekday_with_day(today, weekday, int(m["day"]))
        elif "semana" in after or "week" in after or _next_week_follows(text, m.end()):
            monday = today + datetime.timedelta(days=7 - today.weekday())
            value = monday + datetime.timedelta(days=weekday)
        else:
            include_today = qualifier.endswith(("este", "this"))
            value = _next_weekday(today, weekday, include_today=include_today)
        if value:
            yield Mention(m.start("wd"), m.end(), value)


def _next_week_follows(text: str, end: int) -> bool:
    return bool(re.match(rf"\s*(?:,\s*)?{_NEXT_WEEK}", text[end:]))


def _safe_date(year: int, month: int, day: int) -> datetime.date | None:
    try:
        return datetime.date(year, month, day)
    except ValueError:
        return None


def _infer_year(
    today: datetime.date, month: int, day: int, year: str | None
) -> datetime.date | None:
    """Explicit year wins; otherwise this year, or next year when that is long past."""
    if year:
        full = int(year) + (2000 if len(year) == 2 else 0)
        return _safe_date(full, month, day)
    value = _safe_date(today.year, month, day)
    if value and value < today - datetime.timedelta(days=60):
        value = _safe_date(today.year + 1, month, day)
    return value


def _next_day_of_month(today: datetime.date, day: int) -> datetime.date | None:
    year, month = today.year, today.month
    for _ in range(13):
        value = _safe_date(year, month, day)
        if value and value >= today:
            return value
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return None


def _numeric(text: str, today: datetime.date, lang: str) -> Iterator[Mention]:
    for m in _NUMERIC_RE.finditer(text):
        first, second = int(m[1]), int(m[2])
        day, month = first, second
        # Spanish d/m always; English m/d only when d/m is impossible.
        if lang == "en" and second > 12 >= first:
            day, month = second, first
        if 1 <= month <= 12:
            value = _infer_year(today, month, day, m[3])
            if value:
                yield Mention(m.start(), m.end(), value)
    for m in _ISO_RE.finditer(text):
        value = _safe_date(int(m[1]), int(m[2]), int(m[3]))
        if value:
            yield Mention(m.start(), m.end(), value)


def _named_month(text: str, today: datetime.date) -> Iterator[Mention]:
    for m in _DAY_MONTH_RE.finditer(text):
        value = _infer_year(today, MONTHS[m[2]], int(m[1]), m[3])
        if value:
            yield Mention(m.start(), m.end(), value)
    for m in _MONTH_DAY_RE.finditer(text):
        value = _infer_year(today, MONTHS[m[1]], int(m[2]), m[3])
        if value:
            yield Mention(m.start(), m.end(), value)


def _day_only(text: str, today: datetime.date) -> Iterator[Mention]:
    for m in _DAY_ONLY_RE.finditer(text):
        value = _next_day_of_month(today, int(m[1]))
        if value:
            yield Mention(m.start(), m.end(), value)


def _relative(text: str, today: datetime.date) -> Iterator[Mention]:
    for m in _RELATIVE_RE.finditer(text):
        count = int(m[1]) if m[1].isdigit() else _NUMBER_WORDS[m[1]]
        unit_days = 7 if m[2].startswith(("semana", "week")) else 1
        yield Mention(m.start(), m.end(), today + datetime.timedelta(days=count * unit_days))
    for m in _words_re(r"(?:la\s+)?(?:semana\s+que\s+viene|proxima\s+semana)|next\s+week").finditer(
        text
    ):
        yield Mention(m.start(), m.end(), today + datetime.timedelta(days=7 - today.weekday()))
    for m in _words_re(r"fin\s+de\s+mes|end\s+of\s+(?:the\s+)?month").finditer(text):
        last = calendar.monthrange(today.year, today.month)[1]
        yield Mention(m.start(), m.end(), today.replace(day=last))


def find_dates(text: str, today: datetime.date, lang: str = "es") -> list[Mention]:
    """All date mentions, longest first where they overlap, in text order."""
    folded = fold_keep_length(text)
    finders: list[Callable[[], Iterator[Mention]]] = [
        lambda: _named_month(folded, today),
        lambda: _weekdays(folded, today),
        lambda: _numeric(folded, today, lang),
        lambda: _day_only(folded, today),
        lambda: _fixed(folded, today),
        lambda: _relative(folded, today),
    ]
    found: list[Mention] = []
    for finder in finders:
        for mention in finder():
            if not any(m.start < mention.end and mention.start < m.end for m in found):
                found.append(mention)
    # "no viene hasta el lunes", "see you until Monday": a limit, not the date of a request.
    found = [m for m in found if not _UNTIL_BEFORE.search(folded[max(0, m.start - 12) : m.start])]
    return sorted(found, key=lambda m: m.start)


@dataclass(frozen=True)
class Impossible:
    """A day/month that no calendar has ("31/11", "30 de febrero"), as the operator wrote it."""

    start: int
    end: int
    written: str


def _impossible(day: int, month: int, year: str | None, today: datetime.date) -> bool:
    """A real-looking day and month whose date does not exist (in the year meant, if given)."""
    if not (1 <= day <= 31 and 1 <= month <= 12):
        return False
    if year:
        return _safe_date(int(year) + (2000 if len(year) == 2 else 0), month, day) is None
    # Without a year, 29/02 exists in a leap year: only a date missing from every year counts.
    return all(_safe_date(today.year + n, month, day) is None for n in range(4))


def find_impossible_dates(text: str, today: datetime.date, lang: str = "es") -> list[Impossible]:
    """Dates that look like dates but do not exist. `find_dates` skips them; the caller asks
    which day was meant instead of using another (O8: never a silent substitute)."""
    folded = fold_keep_length(text)
    found: list[Impossible] = []
    for m in _NUMERIC_RE.finditer(folded):
        day, month = int(m[1]), int(m[2])
        if lang == "en" and month > 12 >= day:
            day, month = month, day
        if _impossible(day, month, m[3], today):
            found.append(Impossible(m.start(), m.end(), text[m.start() : m.end()]))
    for m in _DAY_MONTH_RE.finditer(folded):
        if _impossible(int(m[1]), MONTHS[m[2]], m[3], today):
            found.append(Impossible(m.start(), m.end(), text[m.start() : m.end()].strip()))
    for m in _MONTH_DAY_RE.finditer(folded):
        if _impossible(int(m[2]), MONTHS[m[1]], m[3], today):
            found.append(Impossible(m.start(), m.end(), text[m.start() : m.end()].strip()))
    return sorted(found, key=lambda i: i.start)


def target_date(text: str, mentions: list[Mention]) -> datetime.date | None:
    """The date introduced as a destination ("al jueves", "para el lunes", "to Friday")."""
    folded = fold_keep_length(text)
    for mention in mentions:
        if _TARGET_BEFORE.search(folded[max(0, mention.start - 24) : mention.start]):
            return mention.value
    return None


def pick_date(text: str, mentions: list[Mention]) -> datetime.date | None:
    """The date a request is about: a move's target ("al jueves", "to Friday") over its source."""
    if not mentions:
        return None
    target = target_date(text, mentions)
    if target:
        return target
    folded = fold_keep_length(text)
    for mention in mentions:
        if not _SOURCE_BEFORE.search(folded[max(0, mention.start - 12) : mention.start]):
            return mention.value
    return mentions[0].value
