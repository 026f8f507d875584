"""The embedded router on public intent datasets: train on train.jsonl, score dev.jsonl.

    .venv/bin/python bench/public_datasets.py [mixsnips mixatis fb-mtod-es] [--limit N]

Prints one JSON object per dataset: exact-set intent accuracy on dev (the published metric for
MixSNIPS/MixATIS), accuracy by number of gold intents, training and per-message times.

The router is built with `build_router`, exactly as for an organisation. The only dataset-specific
step is turning multi-intent training lines into single-intent examples, since the registry (and
`Example`) holds one intent per utterance: a first router trained on the single-intent lines cuts
each multi-intent line at its connectors, and the cut whose parts best explain the line's gold
intents (one part per intent) becomes extra examples. Intents are compared as sets because these
datasets list them alphabetically, not in utterance order.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from copilot.understanding import Context, Example, Router, build_router  # noqa: E402
from copilot.understanding.segmentation import boundaries  # noqa: E402

DATASETS = Path("/work/shared/datasets")
# Enough multi-intent lines to teach the classifier how requests read inside a longer message,
# few enough to keep training well under the two-minute budget on a laptop.
MAX_ALIGNED_LINES = 8000


def load(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _examples(rows: list[dict[str, Any]]) -> list[Example]:
    return [Example(r["text"], r["intents"][0], r["intents"][0].split("/")[0]) for r in rows]


def _best_cut(router: Router, text: str, gold: list[str]) -> list[Example]:
    """The split of `text` into len(gold) parts that best matches the gold intents, as examples."""
    cuts = boundaries(text)
    n = len(gold)
    if len(cuts) < n - 1 or any(g not in router.classifier.labels for g in gold):
        return []
    splits = []
    for chosen in itertools.combinations(cuts, n - 1):
        edges = [0, *[c.start for c in chosen], len(text)]
        starts = [0, *[c.end for c in chosen]]
        splits.append([text[starts[i] : edges[i + 1]].strip() for i in range(n)])
    parts = sorted({part for split in splits for part in split})
    probs = dict(zip(parts, router.classifier.predict_proba(parts), strict=True))
    column = {label: i for i, label in enumerate(router.classifier.labels)}
    best: tuple[float, list[Example]] = (-math.inf, [])
    for split in splits:
        for order in itertools.permutations(gold):
            score = sum(
                math.log(max(probs[p][column[g]], 1e-9)) for p, g in zip(split, order, strict=True)
            )
            if score > best[0]:
                best = (score, [Example(p, g, g) for p, g in zip(split, order, strict=True)])
    return best[1]


def train(rows: list[dict[str, Any]]) -> tuple[Router, dict[str, float]]:
    started = time.perf_counter()
    singles = [r for r in rows if len(r["intents"]) == 1]
    multis = [r for r in rows if len(r["intents"]) > 1][:MAX_ALIGNED_LINES]
    router = build_router(_examples(singles))
    first = time.perf_counter()
    if not multis:
        return router, {"train_s": round(first - started, 2)}
    aligned = [e for r in multis for e in _best_cut(router, r["text"], sorted(set(r["intents"])))]
    aligned_at = time.perf_counter()
    router = build_router(_examples(singles) + aligned)
    return router, {
        "first_train_s": round(first - started, 2),
        "align_s": round(aligned_at - first, 2),
        "aligned_examples": len(aligned),
        "train_s": round(time.perf_counter() - started, 2),
    }


def evaluate(router: Router, rows: list[dict[str, Any]]) -> dict[str, Any]:
    import datetime
    import zoneinfo

    tz = "America/Argentina/Buenos_Aires"
    now = datetime.datetime(2026, 11, 18, 10, 0, tzinfo=zoneinfo.ZoneInfo(tz))
    ctx = Context(today=now.date(), now=now, tz=tz)
    correct, by_count, totals, timings = 0, Counter[int](), Counter[int](), []
    for row in rows:
        started = time.perf_counter()
        predicted = {task.intent for task in router.understand(row["text"], ctx).tasks}
        timings.append((time.perf_counter() - started) * 1000)
        ok = predicted == set(row["intents"])
        correct += ok
        totals[len(row["intents"])] += 1
        by_count[len(row["intents"])] += ok
    timings.sort()
    return {
        "dev_cases": len(rows),
        "exact_set_accuracy": round(correct / len(rows), 4),
        "by_intent_count": {k: round(by_count[k] / totals[k], 4) for k in sorted(totals)},
        "latency_ms_p50": round(statistics.median(timings), 2),
        "latency_ms_p95": round(timings[int(len(timings) * 0.95)], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="*", default=["mixsnips", "mixatis", "fb-mtod-es"])
    parser.add_argument("--limit", type=int, default=0, help="dev lines per dataset (0: all)")
    args = parser.parse_args()
    for name in args.names:
        router, training = train(load(DATASETS / name / "train.jsonl"))
        dev = load(DATASETS / name / "dev.jsonl")
        result = {"dataset": name, **training, **evaluate(router, dev[: args.limit or None])}
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
