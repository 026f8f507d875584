"""Dialogue-act classifier: accuracy on held-out phrase families (nlu/acts.py).

    .venv/bin/python bench/acts.py

Trains on the train families only and reports accuracy on the dev and test families, each line
as written and as typed fast (lowercase, no accents, no question marks), and the first misses.
Plain Python: no Django, no database.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nlu.acts import ActExample, ActModel, load_corpus, noisy, read_with, split, train  # noqa: E402


def _cases(examples: list[ActExample]) -> list[tuple[str, str]]:
    return [(variant, e.act) for e in examples for variant in noisy(e.text)]


def _accuracy(model: ActModel, cases: list[tuple[str, str]]) -> float:
    return sum(read_with(model, text).act == act for text, act in cases) / len(cases)


def main() -> None:
    corpus = load_corpus()
    model = train(split(corpus, "train"))
    families = Counter(e.family for e in corpus)
    print(f"corpus: {len(corpus)} lines, {len(families)} families")
    for which in ("dev", "test"):
        held = split(corpus, which)
        cases = _cases(held)
        fams = len({e.family for e in held})
        print(
            f"{which}: {fams} families, {len(cases)} cases | accuracy {_accuracy(model, cases):.3f}"
        )
        misses = [(t, a, read_with(model, t).act) for t, a in cases if read_with(model, t).act != a]
        for text, act, got in misses[:12]:
            print(f"   miss: {text!r} is {act}, read {got}")


if __name__ == "__main__":
    main()
