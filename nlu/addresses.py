"""A street address in a request, with or without the street type.

"Av. Cabildo 2150", "calle Thames 1200", "en Cabildo 500", "Cabildo 500", "Cabildo al 500",
"123 Florida St". The street is a capitalised name (or one after a street type or a cue such as
"en", "calle", "dirección") followed by the door number; the number-first English form needs its
suffix (St, Ave, Rd…). What only looks like one is left alone: "el trabajo 362", "a las 10",
"2 equipos", dates ("Lunes 24", "Nov 24", "Wed 25"), amounts ("Gómez 15000", "$ 1500"), CUITs
and phones (more digits than a door number has), and names the caller says are people.

Run it on text whose CUITs, references, dates and times are already blanked (offsets kept).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from common.text import fold

_UPPER = "A-ZÁÉÍÓÚÑÜ"
_LOWER = "a-záéíóúñü"
_STREET_TYPE = (
    r"(?:Av(?:da)?\.?|Avenida|Calle|Pje\.?|Pasaje|Bv\.?|Bvd\.?|Boulevard|Diagonal|Diag\.?"
    r"|Ruta|Camino|Autopista)"
)
# One word of a street name: "Cabildo", "Juan B. Justo" ("B."), "9 de Julio" ("9"), "de", "del".
_NAME_WORD = rf"(?:[{_UPPER}][{_LOWER}{_UPPER}'.]*|\d{{1,2}}(?=\s+de\s)|de|del|la|las|los|y)"
# Spaces inside one address: it never runs across a line ("con Gustavo Medina\n2. sábado").
_SP = r"[^\S\n]+"
_NAME = rf"{_NAME_WORD}(?:{_SP}{_NAME_WORD}){{0,4}}"
_DOOR = r"(?P<door>(?:al\s+)?\d{1,5})(?![\d/:-]|[.,]\d)"
# After the number: not an amount, a unit, a time or a count.
_NOT_AFTER = (
    r"(?!\s*(?:%|\$|pesos|lucas|luca\b|mil\b|k\b|dolares|usd|ars|mas\s+iva|\+|iva\b|hs\b|h\b|"
    r"horas|hours|minutos|mins?\b|am\b|pm\b|dias|days|veces|times|equipos?|splits?|unidades|"
    r"units?|frigorias|btu|kg|litros|metros|mts?\b|m2|x\b|de\s+(?:ene|feb|mar|abr|may|jun|jul|"
    r"ago|sep|oct|nov|dic)))"
)
_WITH_TYPE = re.compile(
    rf"(?<![\w.])(?P<street>{_STREET_TYPE}{_SP}(?:{_NAME})){_SP}{_DOOR}{_NOT_AFTER}"
)
_CUED = re.compile(
    r"(?i:\b(?:en|calle|direcci[oó]n|domicilio|address|at|on|vive en|lives at|queda en)\b)\s*:?\s+"
    rf"(?P<street>(?:{_STREET_TYPE}{_SP})?{_NAME}){_SP}{_DOOR}{_NOT_AFTER}"
)
_BARE = re.compile(rf"(?<![\w$.])(?P<street>{_NAME}){_SP}{_DOOR}{_NOT_AFTER}")
_NUMBER_FIRST = re.compile(
    r"(?<![\w$.,])(?P<door>\d{1,5})\s+(?P<street>"
    rf"[{_UPPER}][{_LOWER}]+(?:\s+[{_UPPER}][{_LOWER}]+){{0,3}})\s+"
    r"(?P<suffix>St|Street|Ave|Avenue|Rd|Road|Blvd|Boulevard|Dr|Drive|Ln|Lane|Way|Pl|Place|Ct)"
    r"\b\.?"
)

# Words that start a capitalised phrase but are no street: dates, documents, people's titles.
_NOT_A_STREET = frozenset(
    re.findall(
        r"\S+",
        """
    lunes martes miercoles jueves viernes sabado domingo hoy manana ayer
    monday tuesday wednesday thursday friday saturday sunday today tomorrow
    mon tue tues wed thu thur thurs fri sat sun
    enero febrero marzo abril mayo junio julio agosto septiembre setiembre octubre noviembre
    diciembre ene feb mar abr may jun jul ago sep set oct nov dic
    january february march april june july august september october november december
    jan aug sept
    trabajo trabajos job jobs orden ot ticket reclamo presupuesto factura invoice quote
    cotizacion cuit cuil dni tel telefono cel celular nro numero number no piso dto depto
    el la los las lo un una a al de del y o en para por con sin que the an and or of for to in
    at on is it this that
    agenda agendale agendame agendar agendá book cancela cancel mova move pasa pasalo
    hay son tengo necesito quiero
    sr sra srta dr dra ing lic don dona mr mrs ms
    split splits aire equipo caldera calefactor termotanque calefon estufa modelo model
    carrier surrey bgh philco samsung lg midea hitachi daikin fujitsu electrolux noblex
    peabody orbis rheem ariston longvie kw frigorias btu
    lote casa local oficina torre unidad uf box sala planta cuota cuotas item paso parte
    unit apt apartment suite room floor flat level
    """,
    )
)


@dataclass(frozen=True)
class AddressMention:
    start: int
    end: int
    text: str  # "Av. Cabildo 2150", "Thames 1200", "123 Florida St"


def _clean(street: str, door: str) -> str:
    words = street.split()
    if words and fold(words[0]) == "calle":
        words = words[1:]  # "calle Thames 1200" is "Thames 1200"
    return " ".join([*words, *door.split()])


def _trimmed(street: str, start: int) -> tuple[str, int]:
    """The street without leading words that are no street ("Mañana Cabildo" → "Cabildo"),
    and where it now starts; ("", start) when nothing is left."""
    for word in re.finditer(r"\S+", street):
        if fold(word.group(0)).rstrip(".") not in _NOT_A_STREET and word.group(0)[:1].isupper():
            return street[word.start() :], start + word.start()
        if word.group(0)[:1].isdigit():
            return street[word.start() :], start + word.start()
    return "", start


def _overlaps(start: int, end: int, spans: Sequence[tuple[int, int]]) -> bool:
    return any(s < end and start < e for s, e in spans)


def find_addresses(text: str, people: Sequence[tuple[int, int]] = ()) -> list[AddressMention]:
    """Addresses in `text`; `people` are spans of names read as customers or technicians, which
    are never a street ("facturale a Gómez 15000")."""
    found: list[AddressMention] = []
    for m in _NUMBER_FIRST.finditer(text):
        found.append(AddressMention(m.start(), m.end(), " ".join(m.group(0).split()).rstrip(".")))
    for pattern in (_WITH_TYPE, _CUED, _BARE):
        for m in pattern.finditer(text):
            street, door = m.group("street"), m.group("door")
            start = m.start("street")
            if pattern is not _WITH_TYPE:
                street, start = _trimmed(street, start)
            if not street or _overlaps(start, m.end(), [(a.start, a.end) for a in found]):
                continue
            if pattern is _BARE and _overlaps(start, m.start("door"), people):
                continue  # no cue: a name read as a person is not a street
            if pattern is _BARE and len(door.split()[-1]) > 4:  # noqa: PLR2004
                continue  # "Gómez 15000": five digits and no cue read as an amount
            found.append(AddressMention(start, m.end(), _clean(street, door)))
    return sorted(found, key=lambda a: a.start)
