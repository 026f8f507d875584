"""The embedded router on public intent datasets: train on train.jsonl, score dev.jsonl.

    .venv/bin/python bench/public_datasets.py [mixsnips mixatis fb-mtod-es] [--limit N]

Prints one JSON object per dataset: exact-set intent accuracy on dev (the published metric for
MixSNIPS/MixATIS), accuracy by number of gold intents, training and per-message times.

The router is built with `build_router`, exactly as for an organisation, from the examples that
`nlu.training.examples_from_labelled` makes of the training lines (the same code
`manage.py evaluate --train` uses): multi-intent lines are cut into single-intent examples.
Intents are compared as sets because these datasets list them alphabetically, not in utterance
order.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nlu import Context, Router, build_router  # noqa: E402
from nlu.training import examples_from_labelled  # noqa: E402

DATASETS = Path("/work/shared/datasets")


def load(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def train(rows: list[dict[str, Any]]) -> tuple[Router, dict[str, float]]:
    started = time.perf_counter()
    lines = [(r["text"], r["intents"]) for r in rows]
    examples = examples_from_labelled(lines, lambda intent: intent.split("/")[0])
    prepared = time.perf_counter()
    router = build_router(examples)
    return router, {
        "align_s": round(prepared - started, 2),
        "examples": len(examples),
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
