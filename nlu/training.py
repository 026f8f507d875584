"""Training examples from labelled multi-intent lines (public benchmarks, `evaluate --train`).

The registry, like `Example`, holds one intent per utterance. A multi-intent line ("play X and
rate Y") still teaches how requests read inside a longer message, so it is cut into parts: a first
router trained on the single-intent lines scores every way of cutting the line at its connectors
into as many parts as it has intents, and the best-explained assignment of parts to intents
becomes extra examples. The second router is trained on both.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

from nlu.router import Router, build_router
from nlu.segmentation import boundaries
from nlu.values import Example

# Enough multi-intent lines to teach how requests read inside a longer message, few enough to
# keep training well under two minutes on this machine.
MAX_ALIGNED_LINES = 8000

Labelled = tuple[str, Sequence[str]]  # (text, intents)
AgentOf = Callable[[str], str]


def best_cut(router: Router, text: str, gold: Sequence[str], agent_of: AgentOf) -> list[Example]:
    """The split of `text` into len(gold) parts that best matches the gold intents."""
    cuts = boundaries(text)
    n = len(gold)
    labels = router.classifier.labels
    if len(cuts) < n - 1 or any(g not in labels for g in gold):
        return []
    splits = []
    for chosen in itertools.combinations(cuts, n - 1):
        edges = [0, *[c.start for c in chosen], len(text)]
        starts = [0, *[c.end for c in chosen]]
        splits.append([text[starts[i] : edges[i + 1]].strip() for i in range(n)])
    parts = sorted({part for split in splits for part in split})
    probs = dict(zip(parts, router.classifier.predict_proba(parts), strict=True))
    column = {label: i for i, label in enumerate(labels)}
    best: tuple[float, list[Example]] = (-math.inf, [])
    for split in splits:
        for order in itertools.permutations(gold):
            score = sum(
                math.log(max(probs[p][column[g]], 1e-9)) for p, g in zip(split, order, strict=True)
            )
            if score > best[0]:
                best = (
                    score,
                    [Example(p, g, agent_of(g)) for p, g in zip(split, order, strict=True)],
                )
    return best[1]


def examples_from_labelled(
    lines: Sequence[Labelled], agent_of: AgentOf, *, max_aligned: int = MAX_ALIGNED_LINES
) -> list[Example]:
    """Single-intent lines as they are, plus the aligned parts of multi-intent lines."""
    singles = [Example(text, intents[0], agent_of(intents[0])) for text, intents in lines
               if len(intents) == 1]  # fmt: skip
    multis = [(text, sorted(set(intents))) for text, intents in lines if len(intents) > 1]
    if not multis or len({e.intent for e in singles}) < 2:
        return singles
    first = build_router(singles)
    aligned = [
        example
        for text, gold in multis[:max_aligned]
        for example in best_cut(first, text, gold, agent_of)
    ]
    return singles + aligned
