"""Likely duplicates of a record about to be created (org-scoped reads, like selectors.py).

Registering a customer, a technician or a vehicle first asks who is already on file that is
probably the same: the copilot then asks the operator instead of creating a second copy.

- **Names** compare as words, not strings: folded (case and accents ignored), punctuation and
  filler words dropped ("de", "SRL", "Sra."), street abbreviations unified ("Avenida" = "Av."),
  in any order, each word allowed a typo or two by its length ("Peres" = "Pérez", "Consorsio" =
  "Consorcio"; numbers never: "Cabildo 2150" is not "Cabildo 2510"). Every word of the shorter
  name must pair with a word of the longer one, so "Juan Pérez" is like "Juan Carlos Pérez"
  but a lone "Pérez" is like no one.
- **Phones** compare in E.164 (`normalise_phone`, the one stored form), the main and the other.
- **CUIT**: the same formatted CUIT. A *different* CUIT on both sides is a different legal
  person, whatever else they share.
- **Addresses**: street and number with the street type and punctuation dropped ("Av. Cabildo
  2150" = "cabildo 2150"), the same unit when both give one, the same city when both give one.
- **Plates**: letters and digits only, upper case ("ab 123 cd" = "AB-123-CD").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from django.core.exceptions import ValidationError

from business.cuit import cuit_problem, format_cuit
from business.models import Address, Customer, Organisation, Technician, Vehicle
from business.scheduling import fold_words
from business.selectors import scoped
from business.validators import normalise_phone

LIMIT = 3  # candidates shown to the operator

# What made a record look the same, strongest first (the order candidates are ranked by).
WEIGHTS = {"cuit": 8, "plate": 8, "phone": 4, "name": 3, "address": 2}

# Words that say nothing about who it is: articles, company forms, honorifics.
_FILLER = frozenset(
    {
        "de", "del", "la", "las", "los", "el", "y", "e", "and", "the", "of",
        "sa", "srl", "sas", "sh", "hnos", "hermanos", "cia", "inc", "ltd", "llc",
        "sr", "sra", "srta", "dr", "dra", "ing", "lic", "arq", "don", "dona", "mr", "mrs", "ms",
    }
)  # fmt: skip
# Written two ways, read as one.
_SAME_WORD = {"avenida": "av", "avda": "av", "ave": "av", "gral": "general", "pte": "presidente",
              "sta": "santa", "sto": "santo", "bv": "boulevard", "bvard": "boulevard",
              "bulevar": "boulevard", "pje": "pasaje", "psje": "pasaje", "diag": "diagonal",
              "nro": "", "no": "", "n": "", "numero": ""}  # fmt: skip
_STREET_TYPES = frozenset({"av", "calle", "boulevard", "pasaje", "diagonal", "ruta", "camino"})
_UNIT_WORDS = frozenset({"piso", "dto", "depto", "departamento", "dpto", "apt", "apto", "unit",
                         "unidad", "of", "oficina", "uf", "pb"})  # fmt: skip
_WORD = re.compile(r"[a-z0-9ñ]+")


@dataclass(frozen=True)
class Likely[T]:
    """A record that is probably the one about to be created, and why."""

    record: T
    reasons: tuple[str, ...]  # "cuit", "plate", "phone", "name", "address"

    @property
    def weight(self) -> int:
        return sum(WEIGHTS[reason] for reason in self.reasons)


# --- words ----------------------------------------------------------------------------------


@lru_cache(maxsize=16384)
def name_words(name: str) -> tuple[str, ...]:
    """The words that identify a name, folded, unified and in order ("Av. Cabildo 2150" →
    ("av", "cabildo", "2150"))."""
    words = (_SAME_WORD.get(word, word) for word in _WORD.findall(fold_words(name)))
    return tuple(word for word in words if word and word not in _FILLER)


def _typos_allowed(word: str) -> int:
    if word.isdigit() or len(word) < 4:
        return 0
    return 1 if len(word) < 8 else 2


def edit_distance(a: str, b: str, cutoff: int) -> int:
    """Optimal-string-alignment distance (a swap of neighbours is one typo), or `cutoff + 1`
    as soon as it is known to be larger than `cutoff`."""
    if abs(len(a) - len(b)) > cutoff:
        return cutoff + 1
    before: list[int] = []
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, start=1):
            cost = 0 if ca == cb else 1
            current[j] = min(current[j - 1] + 1, row[j] + 1, row[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > cutoff:
            return cutoff + 1
        before, row = row, current
    return row[-1]


def words_alike(a: str, b: str) -> bool:
    """The same word, give or take a typo; an initial stands for any word it starts."""
    if a == b:
        return True
    if (len(a) == 1 and b.startswith(a)) or (len(b) == 1 and a.startswith(b)):
        return a.isalpha() and b.isalpha()
    allowed = min(_typos_allowed(a), _typos_allowed(b))
    return allowed > 0 and edit_distance(a, b, allowed) <= allowed


def names_alike(one: str, other: str) -> bool:
    """Whether two names probably name the same person or company (see the module docstring)."""
    a, b = name_words(one), name_words(other)
    if not a or not b:
        return False
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    if len(short) == 1 and len(long_) > 1:
        return False  # a lone surname or first name is like too many people
    left = list(long_)
    for word in sorted(short, key=lambda w: (len(w) == 1, -len(w))):  # initials pair last
        pair = next((w for w in left if w == word), None) or next(
            (w for w in left if words_alike(word, w)), None
        )
        if pair is None:
            return _glued_alike(a, b)
        left.remove(pair)
    return True


def _glued_alike(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """ "LaEspiga" / "La Espiga": the words run together, a typo or two apart."""
    one, other = "".join(a), "".join(b)
    if len(one) < 8 or (any(w.isdigit() for w in (*a, *b)) and _digits(one) != _digits(other)):
        return False
    return edit_distance(one, other, 2) <= 2


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


def _alike_names(wanted: str, rows: Iterable[tuple[int, str]]) -> set[int]:
    """The pks of `rows` (pk, name) whose name is like `wanted`. A word index keeps this to
    the rows that share a word (give or take a typo) with it before comparing whole names."""
    words = name_words(wanted)
    if not words:
        return set()
    by_word: dict[str, list[tuple[int, str]]] = {}
    for pk, name in rows:
        for word in set(name_words(name)):
            by_word.setdefault(word, []).append((pk, name))
    near = [w for w in by_word if any(words_alike(mine, w) for mine in words)]
    candidates = {row for word in near for row in by_word[word]}
    return {pk for pk, name in candidates if names_alike(wanted, name)}


# --- phones, CUITs, addresses, plates -------------------------------------------------------


def phone_key(raw: str) -> str:
    """The phone in E.164, "" when it is none."""
    try:
        return normalise_phone(raw) if (raw or "").strip() else ""
    except ValidationError:
        return ""


def cuit_key(raw: str) -> str:
    """The CUIT as stored (NN-NNNNNNNN-N), "" when it is missing or invalid."""
    return format_cuit(raw) if (raw or "").strip() and cuit_problem(raw) is None else ""


def street_key(street: str) -> str:
    """Street and number without the street type or punctuation: "Av. Cabildo 2150" →
    "cabildo 2150"; "" without a house number (then it says too little)."""
    words = [w for w in name_words(street) if w not in _STREET_TYPES]
    return " ".join(words) if any(w.isdigit() for w in words) else ""


def unit_key(unit: str) -> str:
    """ "Piso 4 Dto. A" / "4°A" / "4 a" → "4a"."""
    return "".join(w for w in _WORD.findall(fold_words(unit)) if w not in _UNIT_WORDS)


def plate_key(plate: str) -> str:
    return re.sub(r"[^A-Z0-9]", "", fold_words(plate).upper())


def _same_place(address: Address, street: str, unit: str, city: str) -> bool:
    if street_key(address.street) != street:
        return False
    units = (unit_key(address.unit), unit)
    if all(units) and units[0] != units[1]:
        return False
    return not city or fold_words(address.city).strip() == city


# --- the finders ----------------------------------------------------------------------------


def _ranked[T](found: dict[int, list[str]], records: dict[int, T], limit: int) -> list[Likely[T]]:
    likely = [Likely(records[pk], tuple(reasons)) for pk, reasons in found.items()]
    likely.sort(key=lambda item: (-item.weight, str(item.record), getattr(item.record, "pk", 0)))
    return likely[:limit]


def customer_duplicates(
    organisation: Organisation,
    *,
    name: str = "",
    phone: str = "",
    cuit: str = "",
    street: str = "",
    unit: str = "",
    city: str = "",
    limit: int = LIMIT,
) -> list[Likely[Customer]]:
    """The organisation's customers that are probably the one described, most likely first."""
    customers = scoped(Customer, organisation)
    found: dict[int, list[str]] = {}

    def add(pks: Iterable[int], reason: str) -> None:
        for pk in pks:
            found.setdefault(pk, []).append(reason)

    wanted_cuit = cuit_key(cuit)
    if wanted_cuit:
        add(customers.filter(cuit=wanted_cuit).values_list("pk", flat=True), "cuit")
    wanted_phone = phone_key(phone)
    if wanted_phone:
        same = customers.filter(phone=wanted_phone) | customers.filter(phone_alt=wanted_phone)
        add(same.values_list("pk", flat=True), "phone")
    if name.strip():
        add(_alike_names(name, customers.values_list("pk", "name")), "name")
    wanted_street = street_key(street)
    if wanted_street:
        number = next(w for w in reversed(wanted_street.split()) if w.isdigit())
        addresses = scoped(Address, organisation).filter(street__contains=number)
        add(
            {
                a.customer_id
                for a in addresses
                if _same_place(a, wanted_street, unit_key(unit), fold_words(city).strip())
            },
            "address",
        )
    if not found:
        return []
    records = customers.prefetch_related("addresses").in_bulk(list(found))
    if wanted_cuit:  # a different CUIT is a different legal person
        found = {
            pk: reasons
            for pk, reasons in found.items()
            if not records[pk].cuit or records[pk].cuit == wanted_cuit
        }
    return _ranked(found, records, limit)


def technician_duplicates(
    organisation: Organisation, *, name: str = "", phone: str = "", limit: int = LIMIT
) -> list[Likely[Technician]]:
    """The organisation's technicians (active or not) that are probably the one described."""
    technicians = scoped(Technician, organisation)
    found: dict[int, list[str]] = {}
    wanted_phone = phone_key(phone)
    if wanted_phone:
        for pk in technicians.filter(phone=wanted_phone).values_list("pk", flat=True):
            found.setdefault(pk, []).append("phone")
    if name.strip():
        for pk in _alike_names(name, technicians.values_list("pk", "name")):
            found.setdefault(pk, []).append("name")
    return _ranked(found, technicians.in_bulk(list(found)), limit) if found else []


def vehicle_duplicates(
    organisation: Organisation, *, plate: str, limit: int = LIMIT
) -> list[Likely[Vehicle]]:
    """The organisation's vehicles with the same plate however it was typed."""
    wanted = plate_key(plate)
    if not wanted:
        return []
    vehicles = scoped(Vehicle, organisation)
    found = {
        pk: ["plate"]
        for pk, stored in vehicles.values_list("pk", "plate")
        if plate_key(stored) == wanted
    }
    return _ranked(found, vehicles.in_bulk(list(found)), limit) if found else []
