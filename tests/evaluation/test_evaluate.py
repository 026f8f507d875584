"""`manage.py evaluate`: the metrics, the three ways to get a router, and bad input."""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from business.models import Organisation
from common.text import fold
from evaluation.metrics import Case, Prediction, compute_metrics

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "evaluation" / "datasets" / "golden.jsonl"
REQUIRED = {
    "cases", "chain_accuracy", "intent_set_accuracy", "agent_accuracy", "intent_f1",
    "entity_f1", "latency_ms_p50", "latency_ms_p95", "per_intent",
}  # fmt: skip


def _fold(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", fold(text)).split())


def _evaluate(*args: str) -> dict[str, object]:
    out = StringIO()
    call_command("evaluate", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_metrics_count_order_sets_agents_and_entities() -> None:
    cases = [
        Case("a", ["create_customer", "book_job"], expected_entities={"customer": "Juan Pérez"}),
        Case("b", ["hours"]),
    ]
    predictions = [
        Prediction(["book_job", "create_customer"], ["scheduling", "customer"],
                   {"customer": "juan perez"}, 1.0),
        Prediction(["pricing_info"], ["general"], {}, 3.0),
    ]  # fmt: skip
    agents = {"create_customer": "customer", "book_job": "scheduling", "hours": "general"}
    metrics = compute_metrics(cases, predictions, agents)
    assert metrics["chain_accuracy"] == 0.0  # order matters
    assert metrics["intent_set_accuracy"] == 0.5  # order does not
    assert metrics["agent_accuracy"] == 1.0  # both cases routed to the right agents
    assert metrics["entity_f1"] == 1.0  # names compare without case and accents
    assert metrics["per_intent"]["hours"]["recall"] == 0.0
    assert metrics["confusion"] == {"hours": {"pricing_info": 1}}


@pytest.mark.django_db
def test_the_shipped_registry_is_evaluated_in_a_throwaway_organisation() -> None:
    before = Organisation.objects.count()
    metrics = _evaluate(str(GOLDEN), "--reference-date", "2026-11-18")
    assert set(metrics) >= REQUIRED
    assert metrics["cases"] >= 400  # the golden set (V7)
    assert metrics["chain_accuracy"] > 0.8  # a floor that catches a broken router, not a target
    assert Organisation.objects.count() == before  # rolled back


@pytest.mark.django_db
def test_train_builds_one_agent_per_intent(tmp_path: Path) -> None:
    train = tmp_path / "train.jsonl"
    lines = [("set an alarm for 7am", "alarm"), ("wake me up at six", "alarm"),
             ("alarm at 5 tomorrow", "alarm"), ("what's the weather in Paris", "weather"),
             ("will it rain today", "weather"), ("is it cold outside", "weather")]  # fmt: skip
    train.write_text("".join(json.dumps({"text": t, "intents": [i]}) + "\n" for t, i in lines))
    dev = tmp_path / "dev.jsonl"
    dev.write_text(json.dumps({"text": "will it rain in Paris", "intents": ["weather"]}) + "\n")
    metrics = _evaluate(str(dev), "--train", str(train))
    assert metrics["cases"] == 1
    assert metrics["intent_set_accuracy"] == 1.0


@pytest.mark.django_db
def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"input": "hola"}\n')
    with pytest.raises(CommandError, match="broken.jsonl:1"):
        call_command("evaluate", str(broken))
    with pytest.raises(CommandError, match="no such file"):
        call_command("evaluate", str(tmp_path / "missing.jsonl"))
    with pytest.raises(CommandError, match="YYYY-MM-DD"):
        call_command("evaluate", str(GOLDEN), "--reference-date", "18/11/2026")
    with pytest.raises(CommandError, match="no organisation"):
        call_command("evaluate", str(GOLDEN), "--org", "nobody")


def test_no_golden_case_is_a_training_example() -> None:
    """The golden set measures generalisation only while its sentences stay out of training."""
    golden = {_fold(json.loads(line)["input"]) for line in GOLDEN.open() if line.strip()}
    registry = json.loads((ROOT / "agents" / "data" / "default_agents.json").read_text())
    examples = {
        _fold(example)
        for agent in registry
        for intent in agent["intents"]
        for example in intent["examples_es"] + intent["examples_en"]
    }
    assert golden & examples == set()
