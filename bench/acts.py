"""Dialogue-act classifier: accuracy on held-out phrase families (nlu/acts.py).

    .venv/bin/python bench/acts.py           # dev and test, per act, misses, timing
    .venv/bin/python bench/acts.py --sweep   # dev only: the training options tried

Trains on the train families only and reports accuracy on the dev and test families, each line
as written and as typed fast (lowercase, no accents, no question marks), per act, and the first
misses; then the time to train the shipped model (every family) and to read one message.
Tune on dev (--sweep never looks at test). Plain Python: no Django, no database.
"""

from __future__ import annotations

import math
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nlu.acts import (  # noqa: E402
    ACTS,
    ActExample,
    ActModel,
    load_corpus,
    noisy,
    read_with,
    split,
    train,
)

SWEEP: list[dict[str, Any]] = [
    {},
    {"c": 10.0},
    {"c": 100.0},
    {"balanced": True},
    {"chars": (1, 4)},
    {"chars": (2, 5)},
    {"word_ngrams": (1, 1)},
    {"word_ngrams": (1, 3)},
]


def _cases(examples: list[ActExample]) -> list[tuple[str, str]]:
    return [(variant, e.act) for e in examples for variant in noisy(e.text)]


def _accuracy(model: ActModel, cases: list[tuple[str, str]]) -> float:
    return sum(read_with(model, text).act == act for text, act in cases) / len(cases)


def _report(model: ActModel, which: str, held: list[ActExample]) -> None:
    cases = _cases(held)
    fams = len({e.family for e in held})
    got = [(text, act, read_with(model, text).act) for text, act in cases]
    right = sum(act == read for _, act, read in got)
    print(f"{which}: {fams} families, {len(cases)} cases | accuracy {right / len(cases):.3f}")
    for name in ACTS:
        mine = [(a, r) for _, a, r in got if a == name]
        if mine:
            wrong = Counter(r for a, r in mine if r != a)
            print(
                f"   {name:<10} {sum(a == r for a, r in mine) / len(mine):.3f} of {len(mine):>3}"
                f"   read as: {dict(wrong.most_common())}"
            )
    for text, act, read in [g for g in got if g[1] != g[2]][:12]:
        print(f"   miss: {text!r} is {act}, read {read}")


def _typo(text: str) -> str:
    """One vowel dropped from the longest word ("reprogramar" → "reprgramar")."""
    tokens = text.split()
    longest = max(range(len(tokens)), key=lambda i: len(tokens[i]))
    word = tokens[longest]
    vowel = re.search(r"[aeiouáéíóú]", word[1:])
    if vowel:
        tokens[longest] = word[: vowel.start() + 1] + word[vowel.start() + 2 :]
    return " ".join(tokens)


PERTURBED: dict[str, Callable[[str], str]] = {
    "an emoji after": lambda text: f"{text} 🙏",
    "a filler before": lambda text: f"eh bueno {text}",
    "a typo": _typo,
}


def _robustness(model: ActModel, held: list[ActExample]) -> None:
    """Dev lines as they also arrive, and how sure the model is when right and wrong: expected
    calibration error over ten confidence bins."""
    for name, change in PERTURBED.items():
        cases: list[tuple[str, str]] = [(change(e.text), e.act) for e in held]
        print(f"   with {name}: {_accuracy(model, cases):.3f}")
    bins = [[0, 0.0, 0] for _ in range(10)]
    loss = 0.0
    cases = _cases(held)
    for text, act in cases:
        reading = read_with(model, text)
        loss -= math.log(max(reading.scores[act], 1e-12))
        b = bins[min(int(reading.confidence * 10), 9)]
        b[0], b[1], b[2] = b[0] + 1, b[1] + reading.confidence, b[2] + (reading.act == act)
    ece = sum(abs(sure - right) for _, sure, right in bins) / len(cases)
    print(f"   log loss {loss / len(cases):.3f}, expected calibration error {ece:.3f}")


def _timing(corpus: list[ActExample]) -> None:
    start = time.perf_counter()
    model = train(corpus)
    trained = time.perf_counter() - start
    texts = [variant for e in corpus[:200] for variant in noisy(e.text)]
    start = time.perf_counter()
    for text in texts:
        model.read(text)
    per_read = (time.perf_counter() - start) / len(texts)
    print(f"shipped model: trains in {trained:.2f} s, reads in {per_read * 1000:.2f} ms a message")


def main() -> None:
    corpus = load_corpus()
    families = Counter(e.family for e in corpus)
    print(f"corpus: {len(corpus)} lines, {len(families)} families")
    if "--sweep" in sys.argv:
        dev = _cases(split(corpus, "dev"))
        for options in SWEEP:
            model = train(split(corpus, "train"), **options)
            print(f"dev {_accuracy(model, dev):.3f}  {options or 'shipped defaults'}")
        return
    model = train(split(corpus, "train"))
    for which in ("dev", "test"):
        _report(model, which, split(corpus, which))
    _robustness(model, split(corpus, "dev"))
    _timing(corpus)


if __name__ == "__main__":
    main()
