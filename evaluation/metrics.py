"""Router metrics over evaluation cases (V2): pure functions, no Django.

A case is PRODUCT.md's JSONL line: `input` and `expected_intents` required; `expected_agents`,
`expected_entities`, `lang`, `tags`, `id` optional. A prediction is the ordered intent chain, the
agent of each intent, and the entities as eval strings; on a model engine also what its model
calls spent and, when the model failed, the failure kind (the chain is then the fallback's).
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from common.text import fold

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
    id: str = ""  # the file's own id, else its line number


@dataclass
class Prediction:
    intents: list[str]
    agents: list[str]
    entities: dict[str, str]
    latency_ms: float
    engine: str = "embedded"
    read_by: str = "embedded"  # embedded | model | fallback (the model failed: embedded's chain)
    fallback: str = ""  # the model failure's kind (timeout, rate_limited, …)
    model_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: Decimal = Decimal(0)  # USD
    model_ms: float = 0.0  # the model calls' own time
    # The router's top candidates per segment: [{"text": …, "candidates": [[intent, p], …]}].
    segments: list[dict[str, Any]] = field(default_factory=list)
    # The router's own steps (whatever engine decided): [agent, intent, confidence] each, what the
    # calibration page reads.
    routed: list[list[Any]] = field(default_factory=list)


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
        id=str(data.get("id", "")),
    )


def _fold(value: str) -> str:
    """`fold` with single spaces: an entity matches whatever spacing the message had."""
    return " ".join(fold(value).split())


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


@dataclass(frozen=True)
class Verdict:
    """What one prediction got right."""

    chain: bool  # the exact ordered chain
    intent_set: bool  # the intents, ignoring order
    agents: bool  # the set of routed agents
    entities: bool | None  # every expected entity found; None when the case expects none


def expected_agents(case: Case, intent_agent: dict[str, str]) -> list[str]:
    return case.expected_agents or [intent_agent.get(i, i) for i in case.expected_intents]


def judge(case: Case, pred: Prediction, intent_agent: dict[str, str]) -> Verdict:
    entities = None
    if case.expected_entities:
        entities = _entity_pairs(case.expected_entities) <= _entity_pairs(pred.entities)
    return Verdict(
        chain=pred.intents == case.expected_intents,
        intent_set=set(pred.intents) == set(case.expected_intents),
        agents=set(pred.agents) == set(expected_agents(case, intent_agent)),
        entities=entities,
    )


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
        verdict = judge(case, pred, intent_agent)
        chain_ok += verdict.chain
        set_ok += verdict.intent_set
        agent_ok += verdict.agents
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


# --- what the model spent ----------------------------------------------------------------------


def _usd(value: Decimal) -> float:
    return float(round(value, 6))


def usage_row(pred: Prediction) -> dict[str, Any]:
    """One case's engine, model calls, tokens, cost and times (the JSON's `per_case`)."""
    return {
        "engine": pred.engine,
        "read_by": pred.read_by,
        "fallback": pred.fallback,
        "model_calls": pred.model_calls,
        "tokens_in": pred.tokens_in,
        "tokens_out": pred.tokens_out,
        "cost_usd": _usd(pred.cost),
        "model_ms": round(pred.model_ms, 3),
        "latency_ms": round(pred.latency_ms, 3),
    }


def usage_summary(predictions: list[Prediction]) -> dict[str, Any]:
    """Totals, and medians per case over every case (what a case costs on this engine); the
    model's own time is the median over the cases it read."""
    read = [p for p in predictions if p.read_by != "embedded"]
    return {
        "cases_read": len(read),
        "calls": sum(p.model_calls for p in predictions),
        "calls_median": statistics.median(p.model_calls for p in predictions),
        "tokens_in": sum(p.tokens_in for p in predictions),
        "tokens_out": sum(p.tokens_out for p in predictions),
        "tokens_in_median": statistics.median(p.tokens_in for p in predictions),
        "tokens_out_median": statistics.median(p.tokens_out for p in predictions),
        "cost_usd": _usd(sum((p.cost for p in predictions), Decimal(0))),
        "cost_usd_median": _usd(statistics.median(p.cost for p in predictions)),
        "model_ms_median": round(statistics.median(p.model_ms for p in read), 3) if read else 0.0,
        "fallbacks": dict(Counter(p.fallback for p in predictions if p.fallback)),
    }


def case_row(case: Case, pred: Prediction, intent_agent: dict[str, str]) -> dict[str, Any]:
    """One line of `--per-case`: the case, both readings, the router's candidates, the verdict."""
    verdict = judge(case, pred, intent_agent)
    return {
        "id": case.id,
        "input": case.input,
        "lang": case.lang,
        "expected_intents": case.expected_intents,
        "predicted_intents": pred.intents,
        "expected_agents": expected_agents(case, intent_agent),
        "predicted_agents": pred.agents,
        "expected_entities": case.expected_entities,
        "predicted_entities": pred.entities,
        "segments": pred.segments,
        "routed": pred.routed,
        "correct": {
            "chain": verdict.chain,
            "intent_set": verdict.intent_set,
            "agents": verdict.agents,
            "entities": verdict.entities,
        },
        **usage_row(pred),
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
