"""Entity extraction over one text: CUIT, date, time, amount, names, service.

Two readings of the same finders:
- a *segment* (one request) takes the first value of each key, or a move's target date;
- the *message* (`whole_message=True`) leaves a key out when the text names two different values
  of it (two customers, two dates), except for a move's target date: one value per key or none,
  as the labelling rules say, so a later step never acts on the wrong one.
"""

from __future__ import annotations

import datetime
import itertools
import re
from collections.abc import Sequence

from common.text import fold, fold_keep_length
from nlu.addresses import AddressMention, find_addresses
from nlu.amounts import find_amount
from nlu.cuit import _DOTTED_CUIT, CUIT_IN_TEXT, format_cuit
from nlu.dates import Mention, find_dates, find_impossible_dates, pick_date, target_date
from nlu.language import detect_language
from nlu.names import NameHit, as_written, find_names
from nlu.normalize import TAKE_BACK
from nlu.references import Reference, find_references
from nlu.service_lexicon import find_service
from nlu.times import TimeMention, find_part_of_day, find_times
from nlu.values import Context, Entities, IntentSpecs

_MOVE_VERB = re.compile(
    r"\b(?:pas[aeá]\w*|mov[eé]\w*|move\w*|corr[eé]\w*|reprogram\w*|cambi\w*|push\w*|"
    r"reschedul\w*|shift\w*|posterg\w*|adelant\w*)"
)


def _blank(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """Spaces over already-understood spans, keeping offsets, so later finders skip them."""
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def _cuits(text: str) -> list[tuple[int, int, str]]:
    found: list[tuple[int, int, str]] = []
    for pattern in (CUIT_IN_TEXT, _DOTTED_CUIT):
        for m in pattern.finditer(text):
            if not any(s < m.end() and m.start() < e for s, e, _ in found):
                found.append((m.start(), m.end(), format_cuit("".join(m.groups())) or ""))
    return sorted(found)


# A job by its number, as the copilot itself names them ("#265") or as people write it ("el
# trabajo 265", "job no. 265", "la OT 265", "el 265"). Folded text; the offsets are the original's.
_NOT_A_DATE_OR_TIME = (
    # "el trabajo 10 de marzo", "trabajo 10 hs", "10:30"
    r"(?!\s*(?:de\s+(?:ene|feb|mar|abr|may|jun|jul|ago|sep|oct|nov|dic)|hs\b|h\b|:|am\b|pm\b))"
)
_JOB_NUMBER = re.compile(
    r"(?:\b(?:trabajo|job|orden|ot)\s+(?:n[°º]\s*|nro\.?\s*|numero\s*|number\s*|no\.\s*)?#?\s*"
    r"|#\s?)(\d{1,7})\b" + _NOT_A_DATE_OR_TIME
)
# "el 362" alone: three or four digits (a day has two, an amount usually five or a unit, a year
# is 19xx/20xx). Not "al 500": that is an address ("Cabildo al 500").
_BARE_JOB_NUMBER = re.compile(
    r"(?<![$\d])\b(?:el|del)\s+(?!(?:19|20)\d\d\b)(\d{3,4})\b(?![.,/]\d)"
    r"(?!\s*(?:%|\$|pesos|lucas|mil\b|k\b|dolares|usd|ars|mts?\b|metros|m2|kg|litros|frigorias"
    r"|btu|hs\b|h\b|horas|:|de\s|y\s+(?:media|cuarto)))" + _NOT_A_DATE_OR_TIME
)


def _job_numbers(text: str, taken: Sequence[Reference] = ()) -> list[tuple[int, int, int]]:
    """Job numbers outside the spans of document references ("ticket #12" is no job #12)."""
    folded = fold_keep_length(text)
    found = [(r.start, r.end, 0) for r in taken]
    for pattern in (_JOB_NUMBER, _BARE_JOB_NUMBER):
        for m in pattern.finditer(folded):
            if not any(s < m.end() and m.start() < e for s, e, _ in found):
                found.append((m.start(), m.end(), int(m.group(1))))
    return sorted(found[len(taken) :])


def _references(entities: Entities, references: list[Reference]) -> None:
    """One quote / invoice / ticket number per kind; two different ones named: neither."""
    quotes = [r.value for r in references if r.kind == "quote"]
    entities.quote_number = _one(quotes, True)
    invoices = [r for r in references if r.kind == "invoice"]
    entities.invoice_number = _one([r.value for r in invoices], True)
    if entities.invoice_number is not None:
        entities.invoice_letter = next((r.letter for r in invoices if r.letter), None)
    tickets = [r.value for r in references if r.kind == "ticket"]
    ticket = _one(tickets, True)
    entities.ticket_id = int(ticket) if ticket is not None else None


def _address(found: list[AddressMention]) -> str | None:
    """The one address named; two different ones: neither (a later step asks)."""
    distinct = list(dict.fromkeys(fold(a.text) for a in found))
    return found[0].text if len(distinct) == 1 else None


def _one(values: Sequence[str], whole_message: bool) -> str | None:
    distinct = list(dict.fromkeys(values))
    if not distinct or (whole_message and len(distinct) > 1):
        return None
    return distinct[0]


def _date(
    text: str,
    dates: list[Mention],
    whole_message: bool,
    intents: Sequence[str],
    specs: IntentSpecs,
) -> datetime.date | None:
    """The message's date; with two, the registry's `date_is` of its intents decides: a move
    keeps its target, a request with a date of its own leaves it to each step."""
    distinct = {m.value for m in dates}
    if len(distinct) <= 1 or not whole_message:
        return pick_date(text, dates)
    if taken_back := _taken_back(text, [(m.start, m.end, m.value) for m in dates]):
        return taken_back
    roles = {specs[i].date_is for i in intents if i in specs}
    if "own" in roles:  # next to a move, two dates may belong to two requests
        return None
    moving = "target" in roles or (not intents and _MOVE_VERB.search(fold(text)))
    return target_date(text, dates) if moving else None


# Between two dates or two times, the words that take the first back ("el martes, no, perdón,
# el jueves", "on Tuesday, scratch that, Thursday"): dictation's self-correction.
_BACK = rf"{TAKE_BACK}|no|o\s+sea|wait|sorry"
_AROUND = r"eh|este|uh|um|el|la|las|al|a|para|on|at|for|to"
_TAKING_BACK = re.compile(rf"^\W*(?:(?:{_AROUND})\W+)*(?:{_BACK})\W+(?:(?:{_BACK}|{_AROUND})\W+)*$")


def _taken_back[T](text: str, mentions: Sequence[tuple[int, int, T]]) -> T | None:
    """The value meant when two are said (start, end, value) and the words between them take
    the first back."""
    for (_, end, value), (start, _, meant) in itertools.pairwise(sorted(mentions, key=_first)):
        if value != meant and _TAKING_BACK.match(fold(text[end:start]) + " "):
            return meant
    return None


def _first(mention: tuple[int, int, object]) -> int:
    return mention[0]


def _time(
    times: list[TimeMention], dates: list[Mention], date: datetime.date | None, whole: bool
) -> str | None:
    """The time that goes with the chosen date: the nearest one after it, else the only one."""
    distinct = list(dict.fromkeys(t.value for t in times))
    if len(distinct) <= 1:
        return distinct[0] if distinct else None
    chosen = [m for m in dates if m.value == date]
    if chosen:
        after = [t for t in times if t.start >= chosen[0].end]
        if after:
            return after[0].value
    return None if whole else times[0].value


def _names(hits: list[NameHit], role: str, whole_message: bool) -> NameHit | None:
    of_role = [hit for hit in hits if hit.role == role]
    distinct = list(dict.fromkeys(fold(hit.name) for hit in of_role))
    if not of_role or (whole_message and len(distinct) > 1):
        return None
    return of_role[0]


def _written(text: str, hit: NameHit) -> str | None:
    """A snapped name as written, when that differs from the name on file."""
    if not hit.matched:
        return None
    written = as_written(text, hit.name, hit.start)
    return written if written != hit.name else None


def extract_entities(
    text: str,
    ctx: Context,
    lang: str | None = None,
    *,
    whole_message: bool = False,
    intents: Sequence[str] = (),
    specs: IntentSpecs | None = None,
) -> Entities:
    lang = lang or detect_language(text)
    cuits = _cuits(text)
    entities = Entities(cuit=_one([c for _, _, c in cuits], whole_message))
    references = find_references(_blank(text, [(s, e) for s, e, _ in cuits]))
    _references(entities, references)
    jobs = _job_numbers(text, references)
    numbers = list(dict.fromkeys(number for _, _, number in jobs))
    entities.job_id = numbers[0] if len(numbers) == 1 else None  # two jobs named: neither
    understood = [(s, e) for s, e, _ in cuits] + [(s, e) for s, e, _ in jobs]
    without_cuit = _blank(text, understood + [(r.start, r.end) for r in references])
    impossible = find_impossible_dates(without_cuit, ctx.today, lang)
    without_cuit = _blank(without_cuit, [(i.start, i.end) for i in impossible])
    dates = find_dates(without_cuit, ctx.today, lang)
    entities.date = _date(without_cuit, dates, whole_message, intents, specs or {})
    if impossible and entities.date is None:
        entities.impossible_date = impossible[0].written  # asked about, never replaced
    entities.part_of_day = find_part_of_day(without_cuit)
    without_dates = _blank(without_cuit, [(m.start, m.end) for m in dates])
    times = find_times(without_dates)
    meant = _taken_back(without_dates, [(t.start, t.end, t.value) for t in times])
    entities.time = meant or _time(times, dates, entities.date, whole_message)
    without_times = _blank(without_dates, [(t.start, t.end) for t in times])
    hits = find_names(text, ctx.vocabulary)
    addresses = find_addresses(without_times, [(h.start, h.start + len(h.name)) for h in hits])
    entities.address = _address(addresses)
    entities.amount = find_amount(_blank(without_times, [(a.start, a.end) for a in addresses]))
    # A name inside an address is the street's ("calle Thames 1200"), not a person.
    hits = [h for h in hits if not any(a.start <= h.start < a.end for a in addresses)]
    customer = _names(hits, "customer", whole_message)
    technician = _names(hits, "technician", whole_message)
    if customer:
        entities.customer, entities.customer_matched = customer.name, customer.matched
        entities.customer_written = _written(text, customer)
    if technician:
        entities.technician, entities.technician_matched = technician.name, technician.matched
        entities.technician_written = _written(text, technician)
    entities.service = find_service(text)
    return entities
