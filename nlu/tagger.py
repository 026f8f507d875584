"""A sequence tagger (CRF, python-crfsuite) for the names the rules miss: customers,
technicians, services and addresses, learnt from the generated corpus's entity spans.

The rules (entities.py) stay first: they snap names to the records, read services from the trade's
lexicon and addresses from their shapes. The tagger only fills a key they left empty — a new
customer's name typed in lowercase ("alta a diego sosa"), a name after "soy" on WhatsApp. Its
features include gazetteers of the organisation's records matched without case or accents; half
the training lines hide them, and most names' own spelling is hidden from training, so the tagger
learns where a name sits and finds ones it has never seen.
"""

from __future__ import annotations

import functools
import random
import re
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pycrfsuite

from common.text import fold
from nlu.name_words import NOT_NAME

LABELS = ("customer", "technician", "service", "address")
_TOKEN = re.compile(r"[^\W_]+|[^\w\s]")
Span = tuple[int, int, str]
# How often a person's word is shown to training without what it is (its spelling), only where it
# sits: a name the records do not have yet is as unseen as a word can be.
FORGET_NAME = 0.9
_PEOPLE = ("customer", "technician")
_IDENTITY = ("w=", "s3=", "p2=", "w-1w=")


@dataclass(frozen=True)
class Gazetteer:
    """Folded names of the organisation's records, as sets of token tuples."""

    customers: frozenset[tuple[str, ...]] = frozenset()
    technicians: frozenset[tuple[str, ...]] = frozenset()


@functools.lru_cache(maxsize=16)
def gazetteer_of(customers: tuple[str, ...], technicians: tuple[str, ...]) -> Gazetteer:
    def names(values: Iterable[str]) -> frozenset[tuple[str, ...]]:
        return frozenset(t for v in values if (t := tuple(_TOKEN.findall(fold(v)))))

    return Gazetteer(names(customers), names(technicians))


def _tokens(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m[0]) for m in _TOKEN.finditer(text)]


def _in_gazetteer(words: Sequence[str], names: frozenset[tuple[str, ...]]) -> list[bool]:
    """Which tokens belong to a whole name of the set (the longest match from each token)."""
    hit = [False] * len(words)
    lengths = sorted({len(name) for name in names}, reverse=True)
    for i in range(len(words)):
        for n in lengths:
            if tuple(words[i : i + n]) in names:
                hit[i : i + n] = [True] * n
                break
    return hit


def _features(
    tokens: Sequence[tuple[int, int, str]], gazetteer: Gazetteer, common: frozenset[str]
) -> list[list[str]]:
    words = [fold(t[2]) for t in tokens]
    customers = _in_gazetteer(words, gazetteer.customers)
    technicians = _in_gazetteer(words, gazetteer.technicians)
    rows = []
    for i, (_, _, raw) in enumerate(tokens):
        word = words[i]
        row = [
            "b", f"w={word}", f"s3={word[-3:]}", f"p2={word[:2]}",
            f"shape={_shape(raw)}",
        ]  # fmt: skip
        for offset in (-2, -1, 1, 2):
            j = i + offset
            row.append(f"w{offset}={words[j] if 0 <= j < len(words) else '^$'}")
        row.append(f"w-1w={words[i - 1] if i else '^'}|{word}")
        # A word the training text never used outside a name: the best cue for a new name.
        row.append("known" if word in common else "novel")
        for offset in (-1, 1):
            j = i + offset
            if 0 <= j < len(words):
                row.append(f"known{offset}={words[j] in common}")
        if customers[i]:
            row.append("gaz=customer")
        if technicians[i]:
            row.append("gaz=technician")
        rows.append(row)
    return rows


def _shape(raw: str) -> str:
    if raw[:1].isupper():
        return "T"
    return "l" if raw.isalpha() else "d" if raw.isdigit() else "p"


def _bio(tokens: Sequence[tuple[int, int, str]], spans: Sequence[Span]) -> list[str]:
    labels = []
    for start, end, _ in tokens:
        inside = [s for s in spans if s[0] <= start and end <= s[1] and s[2] in LABELS]
        if not inside:
            labels.append("O")
        else:
            labels.append(("B-" if start == inside[0][0] else "I-") + inside[0][2])
    return labels


@dataclass
class EntityTagger:
    model: bytes
    common: frozenset[str]  # folded words the training text used outside names
    # The intents whose requests name each kind of person in the corpus (a booking names the
    # customer; a greeting nobody): a name is only filled in for them.
    intents: dict[str, frozenset[str]] = field(default_factory=dict)
    _tagger: Any = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_tagger": None}  # the C tagger is reopened after loading

    def spans(self, text: str, gazetteer: Gazetteer) -> list[Span]:
        tokens = _tokens(text)
        if not tokens:
            return []
        if self._tagger is None:
            self._tagger = pycrfsuite.Tagger()
            self._tagger.open_inmemory(self.model)
        labels = self._tagger.tag(_features(tokens, gazetteer, self.common))
        found: list[Span] = []
        for (start, end, raw), label in zip(tokens, labels, strict=True):
            if not raw[0].isalnum():  # a name never ends on punctuation ("Mike's")
                continue
            joined = found and "\n" not in text[found[-1][1] : start]  # a name is on one line
            if label.startswith("I-") and joined and found[-1][2] == label[2:]:
                found[-1] = (found[-1][0], end, label[2:])
            elif label != "O":
                found.append((start, end, label[2:]))
        return found


def looks_like_a_name(tagger: EntityTagger, value: str) -> bool:
    """Words only, none of them a word the training text or the registry used outside a name:
    what the tagger proposes for a new name must not be "make an" or "el 362"."""
    words = [fold(word) for word in value.split()]
    return 0 < len(words) <= 4 and all(
        word.isalpha() and len(word) >= 2 and word not in tagger.common and word not in NOT_NAME
        for word in words
    )


def train_tagger(
    lines: Sequence[tuple[str, Sequence[Span]]],
    gazetteer: Gazetteer,
    *,
    known_words: Iterable[str] = (),
    intents: dict[str, frozenset[str]] | None = None,
    seed: int = 0,
) -> EntityTagger | None:
    """A CRF over (text, spans); None without labelled spans. Deterministic (L-BFGS, seeded
    choice of the lines that hide the gazetteer)."""
    rng = random.Random(seed)
    trainer = pycrfsuite.Trainer(verbose=False)
    labelled = 0
    examples = [(tokens, _bio(tokens, spans)) for text, spans in lines if (tokens := _tokens(text))]
    common = frozenset(
        fold(token[2])
        for tokens, labels in examples
        for token, label in zip(tokens, labels, strict=True)
        if label[2:] not in _PEOPLE
    ) | {fold(word) for word in known_words}
    for tokens, labels in examples:
        shown = gazetteer if rng.random() < 0.5 else Gazetteer()
        labelled += any(label != "O" for label in labels)
        rows = _features(tokens, shown, common)
        for row, label in zip(rows, labels, strict=True):
            if label[2:] in _PEOPLE and rng.random() < FORGET_NAME:
                row[:] = [f for f in row if not f.startswith(_IDENTITY)]
        trainer.append(rows, labels)
    if not labelled:
        return None
    trainer.set_params({"c1": 0.0, "c2": 0.05, "max_iterations": 80})
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tagger.crfsuite"
        trainer.train(str(path))
        return EntityTagger(path.read_bytes(), common, dict(intents or {}))
