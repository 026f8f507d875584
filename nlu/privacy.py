"""The privacy guard's detectors and vault (T4): personal data out of what leaves the system.

`Vault.mask(text)` replaces phones, emails, CUIT/CUIL, DNI, card numbers (and, when configured,
street addresses) with placeholders such as `[TEL_1]`, the same value always getting the same
placeholder within one vault (one turn), so a model can still tell "the same phone" apart from
"another one". `Vault.unmask(text)` puts the values back in what the model wrote (its answer and
its tool arguments), so the records it acts on are the real ones. `receipt()` says what was
masked: per category, how many distinct values and how many times.

Names are a category too when the caller knows them: `Vault(names=...)` masks each given name
(`[NOMBRE_1]`) wherever it stands as whole words, matched without case or accents ("graciela
ibarra" is "Graciela Ibarra"), the longest first. The NLU knows no records: the names come from
whoever holds them (evaluation.feedback reads the organisation's customers, technicians and users).

Plain Python and regular expressions: no model, nothing downloaded, cheap on every call.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from common.text import fold, fold_keep_length
from nlu.addresses import find_addresses
from nlu.cuit import CUIT_IN_TEXT

PHONE, EMAIL, CUIT, DNI, CARD, ADDRESS = "phone", "email", "cuit", "dni", "card", "address"
NAME = "name"  # only with the names a caller gives (Vault(names=...)), looked for last
CATEGORIES = (EMAIL, CARD, CUIT, DNI, PHONE, ADDRESS)  # the order they are looked for
_TAGS = {PHONE: "TEL", EMAIL: "EMAIL", CUIT: "CUIT", DNI: "DNI", CARD: "TARJETA", ADDRESS: "DIR",
         NAME: "NOMBRE"}  # fmt: skip
PLACEHOLDER = re.compile(r"\[(TEL|EMAIL|CUIT|DNI|TARJETA|DIR|NOMBRE)_(\d{1,4})\]")

_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63})+(?![\w-])")
# 13–19 digits in groups (a card): checked with Luhn before it counts.
_CARD = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
# DNI: 7–8 digits, written with dots (30.123.456) or after the word DNI.
_DNI = re.compile(
    r"(?:(?<=\bdni )|(?<=\bdni: )|(?<=\bdni nro )|(?<=\bdocumento ))\d{7,8}\b"
    r"|(?<![\d.,])\d{1,2}\.\d{3}\.\d{3}(?![\d.,])",
    re.IGNORECASE,
)
# Phones: +54 9 11 5555-1234, 011 4555-1234, 11-5555-1234, 15 5555 1234, (0351) 455-1234…
_PHONE = re.compile(
    r"(?<![\w.,/$-])(?:\+?54[\s-]?)?(?:9[\s-]?)?(?:\(?0?\d{2,4}\)?[\s-]?)?(?:15[\s-]?)?"
    r"\d{3,4}[\s-]\d{4}(?![\w/-]|[.,]\d)"
)


def _luhn(digits: str) -> bool:
    total = 0
    for i, char in enumerate(reversed(digits)):
        n = int(char)
        if i % 2:
            n = n * 2 - 9 if n > 4 else n * 2  # noqa: PLR2004
        total += n
    return total % 10 == 0


def _cards(text: str) -> list[tuple[int, int]]:
    spans = []
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m[0])
        if 13 <= len(digits) <= 19 and _luhn(digits):  # noqa: PLR2004
            spans.append(m.span())
    return spans


_FINDERS: dict[str, Callable[[str], list[tuple[int, int]]]] = {
    EMAIL: lambda text: [m.span() for m in _EMAIL.finditer(text)],
    CARD: _cards,
    CUIT: lambda text: [m.span() for m in CUIT_IN_TEXT.finditer(text)],
    DNI: lambda text: [m.span() for m in _DNI.finditer(text)],
    PHONE: lambda text: [m.span() for m in _PHONE.finditer(text)],
    ADDRESS: lambda text: [(a.start, a.end) for a in find_addresses(text)],
}


@lru_cache(maxsize=64)
def _names_pattern(names: tuple[str, ...]) -> re.Pattern[str] | None:
    """One pattern for all the names, folded, longest first, spaces matching any run of them."""
    folded = {" ".join(fold_keep_length(name).split()) for name in names}
    alternatives = [
        r"\s+".join(map(re.escape, name.split()))
        for name in sorted(folded - {""}, key=len, reverse=True)
    ]
    return re.compile(rf"(?<!\w)(?:{'|'.join(alternatives)})(?!\w)") if alternatives else None


def _name_spans(text: str, names: tuple[str, ...]) -> list[tuple[int, int]]:
    pattern = _names_pattern(names)
    return [m.span() for m in pattern.finditer(fold_keep_length(text))] if pattern else []


def find(
    text: str, categories: tuple[str, ...] = CATEGORIES, names: tuple[str, ...] = ()
) -> list[tuple[int, int, str]]:
    """(start, end, category) of each piece of personal data, without overlaps, in order; the
    given names last (an email or an address that holds a name is masked whole)."""
    return list(_found(text, categories, names))


@lru_cache(maxsize=512)
def _found(
    text: str, categories: tuple[str, ...], names: tuple[str, ...]
) -> tuple[tuple[int, int, str], ...]:
    """`find`, kept by its arguments: every model call of every turn sends the same system
    prompts and tool descriptions, a few kilobytes each, and each turn's Vault is new (issue
    26). A pure function of text, categories and names, so a kept answer is the answer."""
    taken: list[tuple[int, int, str]] = []
    found = [(category, _FINDERS[category](text)) for category in categories]
    for category, spans in [*found, (NAME, _name_spans(text, names))]:
        for start, end in spans:
            if not any(start < e and s < end for s, e, _c in taken):
                taken.append((start, end, category))
    return tuple(sorted(taken))


def redact_for_display(
    text: str, categories: tuple[str, ...] = (CARD,)
) -> tuple[str, Counter[str]]:
    """What is shown, with the given categories cut to their last four characters ("•••• 1111"):
    never the whole value, and the count per category for the receipt."""
    counts: Counter[str] = Counter()
    spans = find(text, categories) if text else []
    if not spans:
        return text, counts
    out, cursor = [], 0
    for start, end, category in spans:
        digits = re.sub(r"\W", "", text[start:end])
        out.append(text[cursor:start])
        out.append(f"•••• {digits[-4:]}")
        counts[category] += 1
        cursor = end
    out.append(text[cursor:])
    return "".join(out), counts


@dataclass
class Vault:
    """One turn's placeholders: value → placeholder and back, and what was masked."""

    categories: tuple[str, ...] = tuple(c for c in CATEGORIES if c != ADDRESS)
    names: tuple[str, ...] = ()  # people's names to mask as well (module docstring)
    _by_value: dict[tuple[str, str], str] = field(default_factory=dict)
    _by_placeholder: dict[str, str] = field(default_factory=dict)
    _seen: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # Each text masked once a turn: an agent's loop sends the same prompt, history and earlier
    # tool results on every call; they are neither searched nor counted again.
    _masked: dict[str, str] = field(default_factory=dict)

    def mask(self, text: str) -> str:
        if not text:
            return text
        with self._lock:
            done = self._masked.get(text)
        if done is not None:
            return done
        spans = find(text, self.categories, self.names)
        out, cursor = [], 0
        with self._lock:
            if (done := self._masked.get(text)) is not None:  # another thread did it meanwhile
                return done
            for start, end, category in spans:
                value = text[start:end]
                out.append(text[cursor:start])
                out.append(self._placeholder(category, value))
                self._seen[category] += 1
                cursor = end
            out.append(text[cursor:])
            self._masked[text] = masked = "".join(out)
        return masked

    def _placeholder(self, category: str, value: str) -> str:
        key = (category, fold(re.sub(r"[\s().-]", "", value)))
        found = self._by_value.get(key)
        if found is None:
            number = sum(1 for c, _v in self._by_value if c == category) + 1
            found = f"[{_TAGS[category]}_{number}]"
            self._by_value[key] = found
            # A card number never comes back whole: no tool needs it, and what the model writes
            # is shown (only its last four digits, as on a receipt).
            shown = f"•••• {re.sub(r'\W', '', value)[-4:]}" if category == CARD else value
            self._by_placeholder[found] = shown
        return found

    def unmask(self, text: str) -> str:
        """The model's text with the real values back; a placeholder it made up stays as is."""
        if not text or "[" not in text:
            return text
        return PLACEHOLDER.sub(lambda m: self._by_placeholder.get(m[0], m[0]), text)

    def receipt(self) -> dict[str, dict[str, int]]:
        """Per category: distinct values masked and how many times, for the trace."""
        with self._lock:
            distinct = Counter(category for category, _value in self._by_value)
            return {
                category: {"values": distinct[category], "times": self._seen[category]}
                for category in (*CATEGORIES, NAME)
                if self._seen[category]
            }
