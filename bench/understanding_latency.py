"""Latency (and accuracy) of the embedded engine over the golden inputs, without Django.

    .venv/bin/python bench/understanding_latency.py [--examples agents/data/default_agents.json]
        [--golden evaluation/datasets/golden.jsonl] [--reference-date 2026-11-18] [--repeat 3]

Trains a router on the registry's shipped examples, then times `Router.understand` on every golden
input (after one warm-up pass, so the numbers are per message in a running process). Prints one JSON
object: training time, p50/p95/max ms per message, and the golden chain / intent-set / agent
accuracy and entity F1, so a change that buys speed with accuracy shows both.
Targets: p50 ≤ 10 ms, p95 ≤ 40 ms.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import time
import zoneinfo
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nlu import Context, Example, Router, Understanding, build_router  # noqa: E402

TZ = "America/Argentina/Buenos_Aires"


def registry_examples(path: Path) -> list[Example]:
    """Examples from the shipped registry file (a list of agents with their intents)."""
    agents = json.loads(path.read_text(encoding="utf-8"))
    examples = []
    for agent in agents:
        for intent in agent.get("intents", []):
            for lang in ("es", "en"):
                for text in intent.get(f"examples_{lang}", []):
                    examples.append(Example(text, intent["name"], agent["name"], lang))
    return examples


def _entity_counts(expected: dict[str, str], got: dict[str, str]) -> tuple[int, int, int]:
    tp = sum(1 for k, v in expected.items() if got.get(k, "").casefold() == v.casefold())
    return tp, len(got) - tp, len(expected) - tp


def score(
    router: Router, cases: Sequence[dict[str, Any]], results: Sequence[Understanding]
) -> dict[str, Any]:
    chain = same_set = agents = tp = fp = fn = 0
    for case, result in zip(cases, results, strict=True):
        expected = case["expected_intents"]
        chain += result.intents == expected
        same_set += set(result.intents) == set(expected)
        expected_agents = case.get("expected_agents") or [router.agent_for(i) for i in expected]
        agents += result.agents == expected_agents
        counts = _entity_counts(case.get("expected_entities", {}), result.entities.as_eval_dict())
        tp, fp, fn = tp + counts[0], fp + counts[1], fn + counts[2]
    n = len(cases)
    return {
        "chain_accuracy": round(chain / n, 4),
        "intent_set_accuracy": round(same_set / n, 4),
        "agent_accuracy": round(agents / n, 4),
        "entity_f1": round(2 * tp / max(1, 2 * tp + fp + fn), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=Path, default=ROOT / "agents/data/default_agents.json")
    parser.add_argument("--golden", type=Path, default=ROOT / "evaluation/datasets/golden.jsonl")
    parser.add_argument("--reference-date", default="2026-11-18")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    examples = registry_examples(args.examples)
    started = time.perf_counter()
    import sklearn.feature_extraction.text  # noqa: F401  (once per process; timed apart)
    import sklearn.svm  # noqa: F401

    import_s = time.perf_counter() - started
    started = time.perf_counter()
    router = build_router(examples)
    train_s = time.perf_counter() - started

    cases = [
        json.loads(line) for line in args.golden.read_text(encoding="utf-8").splitlines() if line
    ]
    day = datetime.date.fromisoformat(args.reference_date)
    now = datetime.datetime.combine(day, datetime.time(10, 0), tzinfo=zoneinfo.ZoneInfo(TZ))
    ctx = Context(today=day, now=now, tz=TZ)
    results = [router.understand(case["input"], ctx) for case in cases]  # warm-up
    timings = []
    for _ in range(args.repeat):
        for case in cases:
            t0 = time.perf_counter()
            router.understand(case["input"], ctx)
            timings.append((time.perf_counter() - t0) * 1000)
    timings.sort()
    report = {
        "examples": len(examples),
        "intents": len(router.intents),
        "sklearn_import_s": round(import_s, 3),
        "train_s": round(train_s, 3),
        "cases": len(cases),
        "latency_ms_p50": round(statistics.median(timings), 3),
        "latency_ms_p95": round(timings[int(len(timings) * 0.95)], 3),
        "latency_ms_max": round(timings[-1], 3),
        **score(router, cases, results),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
