"""Router metrics over evaluation cases (V2): pure functions, no Django.

A case is PRODUCT.md's JSONL line: `input` and `expected_intents` required; `expected_agents`,
`expected_entities`, `lang`, `tags` optional. A prediction is the ordered intent chain, the agent of
each intent, and the entities as eval strings.
"""

from __future__ import annotations

import statistics
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

# Entity values compared loosely (case and accents); the rest exactly.
LOOSE_KEYS = frozenset({"customer", "technician", "service"})


@dataclass
class Case:
    input: str
    expected_intents: list[str]
    expected_agents: list[str] = field(default_factory=list)
    expected_entities: dict[str, str] = field(default_factory=dict)
    lang: str = ""
    tags: list[str] = field(default_factory=list)


@dataclass
class Prediction:
    intents: list[str]
    agents: list[str]
    entities: dict[str, str]
    latency_ms: float


def case_from_json(data: dict[str, Any]) -> Case:
    """Accept PRODUCT.md's keys and the public datasets' (`text`, `intents`)."""
    text = data.get("input", data.get("text"))
    intents = data.get("expected_intents", data.get("intents"))
    if not isinstance(text, str) or not isinstance(intents, list) or not intents:
        raise ValueError("each case needs 'input' (or 'text') and a non-empty 'expected_intents'")
    return Case(
        input=text,
        expected_intents=[str(i) for i in intents],
        expected_agents=[str(a) for a in data.get("expected_agents", [])],
        expected_entities={k: str(v) for k, v in (data.get("expected_entities") or {}).items()},
        lang=str(data.get("lang", "")),
        tags=list(data.get("tags", [])),
    )


def _fold(value: str) -> str:
    decomposed = unicodedata.normalize("NFKD", value.casefold())
    return " ".join("".join(c for c in decomposed if not unicodedata.combining(c)).split())


def _entity_pairs(entities: dict[str, str]) -> set[tuple[str, str]]:
    return {
        (key, _fold(value) if key in LOOSE_KEYS else value.strip())
        for key, value in entities.items()
    }


def _percentile(values: list[float], pct: float) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(pct) - 1]


def _ratio(numerator: int, denominator: int) -> float:
    return round(numerator / denominator, 4) if denominator else 0.0


def compute_metrics(
    cases: list[Case], predictions: list[Prediction], intent_agent: dict[str, str]
) -> dict[str, Any]:
    """Every metric of `manage.py evaluate --json` (PRODUCT.md names)."""
    chain_ok = set_ok = agent_ok = 0
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    ent_tp = ent_fp = ent_fn = 0
    confusion: dict[str, Counter[str]] = {}
    for case, pred in zip(cases, predictions, strict=True):
        chain_ok += pred.intents == case.expected_intents
        set_ok += set(pred.intents) == set(case.expected_intents)
        expected_agents = case.expected_agents or [
            intent_agent.get(i, i) for i in case.expected_intents
        ]
        agent_ok += set(pred.agents) == set(expected_agents)
        expected, got = Counter(case.expected_intents), Counter(pred.intents)
        tp.update(expected & got)
        fp.update(got - expected)
        fn.update(expected - got)
        if len(case.expected_intents) == 1:
            row = confusion.setdefault(case.expected_intents[0], Counter())
            row["+".join(pred.intents) or "(none)"] += 1
        if case.expected_entities:
            want, have = _entity_pairs(case.expected_entities), _entity_pairs(pred.entities)
            ent_tp += len(want & have)
            ent_fp += len({p for p in have - want if p[0] in case.expected_entities})
            ent_fn += len(want - have)
    return {
        "cases": len(cases),
        "chain_accuracy": _ratio(chain_ok, len(cases)),
        "intent_set_accuracy": _ratio(set_ok, len(cases)),
        "agent_accuracy": _ratio(agent_ok, len(cases)),
        "intent_f1": _f1(sum(tp.values()), sum(fp.values()), sum(fn.values())),
        "entity_f1": _f1(ent_tp, ent_fp, ent_fn),
        "latency_ms_p50": round(_percentile([p.latency_ms for p in predictions], 50), 3),
        "latency_ms_p95": round(_percentile([p.latency_ms for p in predictions], 95), 3),
        "per_intent": _per_intent(tp, fp, fn),
        "confusion": {k: dict(v) for k, v in sorted(confusion.items())},
    }


def _f1(tp: int, fp: int, fn: int) -> float:
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return round(2 * precision * recall / (precision + recall), 4) if precision + recall else 0.0


def _per_intent(
    tp: Counter[str], fp: Counter[str], fn: Counter[str]
) -> dict[str, dict[str, float]]:
    report: dict[str, dict[str, float]] = {}
    for intent in sorted(set(tp) | set(fp) | set(fn)):
        t, p, n = tp[intent], fp[intent], fn[intent]
        report[intent] = {
            "precision": _ratio(t, t + p),
            "recall": _ratio(t, t + n),
            "f1": _f1(t, p, n),
            "support": t + n,
        }
    return report
