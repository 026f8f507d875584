"""A generated training and evaluation corpus: phrase families × slot values × noise models.

`generate(records, agents)` fills every family (families.py) with the organisation's own names,
streets and services and the lexicons' dates, times and amounts (lexicon.py), passes each line
through its voice's noise models (noise.py), and composes multi-intent lines from two families of
the same split with real connectors. Every line knows its chain of intents and its entity spans
(character offsets into the final text). Plain Python, seeded: the same records give the same
corpus.

Splits are by family: all the lines of a family — and every composition built from it — are in
one split, so dev and test measure phrasing the model never saw. Test is for reporting only.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from nlu.corpus import lexicon
from nlu.corpus.families import FAMILIES, TRAIN_ONLY, Family
from nlu.corpus.noise import Piece, apply_noise, retype
from nlu.rules import is_danger
from nlu.service_lexicon import find_service

SPLITS = ("train", "dev", "test")
# Lines per family, and multi-intent compositions per split (of two families each).
PER_FAMILY = 8
COMPOSED = {"train": 300, "dev": 120, "test": 120}
# Retyped lines per train and dev family: the family's sentence as an operator typing fast on a
# phone writes it (noise.retype). They come after every other line, from a generator of their own,
# and never for test families, so the test split stays exactly as it was.
RETYPED = 3
# Requests that depend on another come after it in the text, so the text order is the chain.
_DEPENDS = {
    "book_job": {"create_customer", "check_availability"},
    "generate_quote": {"create_customer"},
    "generate_invoice": {"book_job", "create_customer"},
    "assign_vehicle": {"book_job"},
    "bulk_reschedule": {"technician_sick"},
}
# Never composed by the generator: they absorb, open or replace the chain (TAXONOMY.md's labelling
# rules), so only the families written for them say how they combine.
_ALONE = frozenset(
    {"greeting", "farewell", "unknown", "frustration_detected", "emergency", "escalate", "dispatch",
     "bulk_reschedule", "technician_sick", "complaint"}
)  # fmt: skip
_CONNECTORS = {
    "es": (" y ", ", y después ", ". También ", " y además ", ", después ", " y aparte "),
    "en": (" and ", ", and then ", ". Also ", " and also ", ", then "),
}
# A second request does not greet again: "…y hola, quería…" is not how anyone writes.
_GREETING = re.compile(r"^(?:hola|buenas|hi|hey)\b[!,.]*\s*", re.IGNORECASE)
_SLOT = re.compile(r"\{(\w+)\}")
# Entity keys of the evaluation format (PRODUCT.md); "address" is a span only.
EVAL_KEYS = ("customer", "technician", "date", "time", "cuit", "amount", "service")


@dataclass(frozen=True)
class Records:
    """The organisation's own names, as plain lists (a fresh install falls back to lexicons)."""

    customers: Sequence[str] = ()
    technicians: Sequence[str] = ()
    streets: Sequence[str] = ()
    services: Sequence[str] = ()


@dataclass
class Line:
    text: str
    intents: list[str]
    agents: list[str]
    lang: str
    voice: str
    split: str
    families: list[str]
    spans: list[tuple[int, int, str]] = field(default_factory=list)
    entities: dict[str, str] = field(default_factory=dict)

    def as_case(self, number: int) -> dict[str, object]:
        """One line of the evaluation file format (PRODUCT.md), spans as an extra key."""
        kind = "multi" if len(self.intents) > 1 else "single"
        tags = [kind, f"voice:{self.voice}", *(f"family:{f}" for f in self.families)]
        return {
            "id": f"{self.split}-{number}",
            "input": self.text,
            "expected_intents": self.intents,
            "expected_agents": self.agents,
            "expected_entities": self.entities,
            "lang": self.lang,
            "tags": tags,
            "spans": [list(span) for span in self.spans],
        }


def split_of(family: Family, seed: int) -> str:
    """The family's split: within each chain, families in a seeded order go train, dev, train,
    test, train (so every intent keeps training families); a TRAIN_ONLY family is train."""
    if family in TRAIN_ONLY:
        return "train"
    group = sorted(
        (f for f in FAMILIES if f.chain == family.chain),
        key=lambda f: hashlib.sha256(f"{seed}:{f.template}".encode()).hexdigest(),
    )
    return ("train", "dev", "train", "test", "train")[group.index(family) % 5]


def generate(
    records: Records, agents: Mapping[str, str], *, seed: int = 0, per_family: int = PER_FAMILY
) -> list[Line]:
    """Every family the registry can label (all its intents known), then compositions."""
    rng = random.Random(seed)
    # The TRAIN_ONLY families draw from a generator of their own: they never move the
    # held-out lines.
    extra = random.Random(f"{seed}:train-only")
    dated = random.Random(f"{seed}:weekday-dates")
    values = _Values(records)
    usable = [f for f in FAMILIES if all(intent in agents for intent in f.chain)]
    lines: list[Line] = []
    for family in usable:
        split = split_of(family, seed)
        for _ in range(per_family):
            slots = values.draw(rng, family.lang)
            if split == "train":
                slots = _weekday_dated(slots, dated, family.lang)
            lines.append(_render([family], slots, agents, split, rng))
    for split in SPLITS:
        pool = [f for f in usable if split_of(f, seed) == split and not set(f.chain) & _ALONE]
        lines.extend(_compose(pool, values, agents, split, rng))
    for family in TRAIN_ONLY:
        if all(intent in agents for intent in family.chain):
            for _ in range(per_family):
                slots = {**values.draw(extra, family.lang), **_personal(extra, family.lang)}
                lines.append(_render([family], slots, agents, "train", extra))
    lines.extend(_retyped(usable, values, agents, seed))
    return lines


def _weekday_dated(
    slots: dict[str, tuple[str, str]], rng: random.Random, lang: str
) -> dict[str, tuple[str, str]]:
    """A third of the train lines name their date as a weekday with its number ("el martes
    1"), from a generator of their own: the other splits' lines and draws do not move."""
    if rng.random() >= 1 / 3:
        return slots
    dates = lexicon.WEEKDAY_DATES_EN if lang == "en" else lexicon.WEEKDAY_DATES_ES
    return {**slots, "date": rng.choice(dates)}


def _personal(rng: random.Random, lang: str) -> dict[str, tuple[str, str]]:
    """The personal slots of the train-only hard negatives (never an entity)."""
    relatives = lexicon.RELATIVES_EN if lang == "en" else lexicon.RELATIVES_ES
    return {
        "xutility": (rng.choice(lexicon.UTILITIES), ""),
        "xrelative": (rng.choice(relatives), ""),
        "xteam": (rng.choice(lexicon.TEAMS), ""),
    }


def _retyped(
    usable: Sequence[Family], values: _Values, agents: Mapping[str, str], seed: int
) -> list[Line]:
    """RETYPED fast-typed lines of each train and dev family (voice `fast`): dev gets a real
    measure of typing fast over phrasing it never saw, train learns what slips look like."""
    rng = random.Random(f"{seed}:retyped")
    lines = []
    for family in usable:
        split = split_of(family, seed)
        if split == "test":
            continue
        for _ in range(RETYPED):
            slots = values.draw(rng, family.lang)
            lines.append(_render([family], slots, agents, split, rng, retyped=True))
    return lines


def varied_records(records: Records, *, seed: int = 0, names: int = 200) -> Records:
    """The records plus made-up people (lexicon first names × surnames) and the lexicon's
    streets: what the entity tagger trains on, so it learns where a name goes in a sentence
    rather than the few names the organisation has."""
    rng = random.Random(seed)
    people = sorted({f"{first} {last}" for first in lexicon.FIRST_NAMES
                     for last in lexicon.SURNAMES})  # fmt: skip
    made_up = rng.sample(people, min(names, len(people)))
    return Records(
        customers=[*records.customers, *made_up[: names * 4 // 5]],
        technicians=[*records.technicians, *made_up[names * 4 // 5 :]],
        streets=[*records.streets, *lexicon.STREETS],
        services=records.services,
    )


def tagged_lines(lines: Iterable[Line]) -> list[tuple[str, list[tuple[int, int, str]]]]:
    """(text, spans) of the train split: what the entity tagger learns."""
    return [(line.text, line.spans) for line in lines if line.split == "train"]


def person_intents(lines: Iterable[Line]) -> dict[str, frozenset[str]]:
    """For customer and technician, the intents whose single requests name one in the corpus."""
    found: dict[str, set[str]] = {"customer": set(), "technician": set()}
    for line in lines:
        if len(line.intents) == 1:
            for _, _, label in line.spans:
                if label in found:
                    found[label].add(line.intents[0])
    return {key: frozenset(value) for key, value in found.items()}


def training_lines(lines: Iterable[Line]) -> list[tuple[str, str, str]]:
    """(text, intent, lang) of the train split's single-intent lines: what the router learns."""
    return [(line.text, line.intents[0], line.lang) for line in lines
            if line.split == "train" and len(line.intents) == 1]  # fmt: skip


class _Values:
    """Slot values for one line, shared by the parts of a composed line."""

    def __init__(self, records: Records) -> None:
        self.customers = list(records.customers) or list(lexicon.CUSTOMERS)
        self.technicians = list(records.technicians) or list(lexicon.TECHNICIANS)
        self.streets = list(records.streets) or list(lexicon.STREETS)
        # Only services the engine reads as a service (a kind of work and what it is done to),
        # and none that names a danger ("reparación de pérdida de gas" reads as an emergency).
        own = [
            s for s in records.services
            if (find_service(s) or "") == s.lower() and not is_danger(s)
        ]  # fmt: skip
        # The records' names are Spanish (PriceItem.name).
        self.services = {"es": own + list(lexicon.SERVICES_ES), "en": list(lexicon.SERVICES_EN)}

    def draw(self, rng: random.Random, lang: str) -> dict[str, tuple[str, str]]:
        """slot → (surface, label)."""
        en = lang == "en"
        date = rng.choice(lexicon.DATES_EN if en else lexicon.DATES_ES)
        other = rng.choice([d for d in (lexicon.DATES_EN if en else lexicon.DATES_ES)
                            if d[1] != date[1]])  # fmt: skip
        time = rng.choice(lexicon.TIMES_EN if en else lexicon.TIMES_ES)
        amount = rng.choice(lexicon.AMOUNTS_EN if en else lexicon.AMOUNTS_ES)
        customer, technician = rng.choice(self.customers), rng.choice(self.technicians)
        service = rng.choice(self.services[lang])
        cuit, street = rng.choice(lexicon.CUITS), rng.choice(self.streets)
        return {
            "customer": (customer, customer), "technician": (technician, technician),
            "date": date, "xdate": (other[0], ""), "time": time, "amount": amount,
            "service": (service, service.lower()), "cuit": cuit, "street": (street, street),
        }  # fmt: skip


def _pieces(template: str, slots: Mapping[str, tuple[str, str]], lang: str) -> list[Piece]:
    pieces: list[Piece] = []
    at = 0
    for match in _SLOT.finditer(template):
        literal, (surface, _) = template[at : match.start()], slots[match[1]]
        literal, surface = _contract(literal, surface, lang)
        pieces.append(Piece(literal))
        label = "" if match[1].startswith("x") else match[1]
        pieces.append(Piece(surface, "address" if label == "street" else label, value=True))
        at = match.end()
    pieces.append(Piece(template[at:]))
    return pieces


def _contract(literal: str, surface: str, lang: str) -> tuple[str, str]:
    """ "a el viernes" → "al viernes"; "to on Friday" → "to Friday"."""
    if lang == "es" and surface.startswith("el ") and re.search(r"\b(a|de)\s$", literal):
        return literal[:-1] + "l ", surface[3:]
    if lang == "en" and surface.startswith("on ") and re.search(r"\b(to|for|from)\s$", literal):
        return literal, surface[3:]
    return literal, surface


def _render(
    families: Sequence[Family],
    slots: Mapping[str, tuple[str, str]],
    agents: Mapping[str, str],
    split: str,
    rng: random.Random,
    connector: str = "",
    *,
    retyped: bool = False,
) -> Line:
    first = families[0]
    pieces = _pieces(first.template, slots, first.lang)
    for family in families[1:]:
        more = _pieces(family.template, slots, family.lang)
        more[0].text = _lower_first(_GREETING.sub("", more[0].text))
        pieces += [Piece(connector), *more]
    if retyped:
        retype(pieces, first.lang, rng)
    else:
        apply_noise(pieces, first.voice, first.lang, rng)
    text, spans, at, canonical = "", [], 0, {}
    for piece in pieces:
        if piece.label and piece.text:
            spans.append((at, at + len(piece.text), piece.label))
            if piece.canonical:
                canonical[at] = piece.canonical
        text += piece.text
        at += len(piece.text)
    intents = [intent for family in families for intent in family.chain]
    entities = _entities(spans, slots, text, canonical)
    voice = "fast" if retyped else first.voice
    return Line(text, intents, [agents[i] for i in intents], first.lang, voice, split,
                [f.id for f in families], spans, entities)  # fmt: skip


def _lower_first(text: str) -> str:
    stripped = text.lstrip()
    if len(stripped) > 1 and stripped[0].isupper() and stripped[1].islower():
        return text[: len(text) - len(stripped)] + stripped[0].lower() + stripped[1:]
    return text


def _entities(
    spans: Sequence[tuple[int, int, str]],
    slots: Mapping[str, tuple[str, str]],
    text: str,
    canonical: Mapping[int, str],
) -> dict[str, str]:
    """The evaluation's labels for the slots the line uses; as typed for names and services,
    a misspelt name as the records spell it (what the engine should snap it to)."""
    found: dict[str, str] = {}
    for start, end, label in spans:
        if label not in EVAL_KEYS:
            continue
        typed = canonical.get(start, text[start:end])
        found[label] = typed if label in ("customer", "technician", "service") else slots[label][1]
    return found


def _compose(
    pool: Sequence[Family],
    values: _Values,
    agents: Mapping[str, str],
    split: str,
    rng: random.Random,
) -> list[Line]:
    lines: list[Line] = []
    singles = [f for f in pool if len(f.chain) == 1]
    for _ in range(COMPOSED[split] if singles else 0):
        first = rng.choice(singles)
        partners = [f for f in singles if f.lang == first.lang and f.chain != first.chain]
        same_voice = [f for f in partners if f.voice == first.voice]
        if not partners:
            continue
        second = rng.choice(same_voice or partners)
        # A request that depends on the other is written second (its text order is the chain).
        # Registering the customer comes before anything done for them (TAXONOMY.md).
        depends = _DEPENDS.get(first.chain[0], set()) | {"create_customer"}
        pair = [second, first] if second.chain[0] in depends else [first, second]
        connector = rng.choice(_CONNECTORS[first.lang])
        lines.append(_render(pair, values.draw(rng, first.lang), agents, split, rng, connector))
    return lines
