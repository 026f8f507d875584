"""`manage.py evaluate --engine llm|hybrid` against the scripted OpenAI-compatible server over real
HTTP: the orchestrator model's chain is scored, a failed call counts as the embedded reading, hybrid
asks only below a gate, and every case says what its calls cost (`--per-case` has the rest).

The orchestrator's requests all offer the same `ask_<agent>` tools, so each case's reply is told
apart by the case's own words in the request (`has_text`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from business.models import Organisation
from llm import pricing
from llm.models import ModelCall, ModelPrice
from testing.scripted import ScriptedServer, has_text, status, tool_calls

pytestmark = pytest.mark.django_db

BOOK = "Agendale a Pérez una visita el martes a las 10"
OWED = "¿Cuánto me debe García?"
HOURS = "¿A qué hora abren?"
VAGUE = "el coso ese"  # the embedded router is unsure of it (below the hybrid gate)


@pytest.fixture
def server(server: ScriptedServer, settings: Any) -> Iterator[ScriptedServer]:
    settings.OPENAI_API_KEY = ""  # nothing configured: each test says where the model is
    settings.OPENAI_TIMEOUT = 2.0
    settings.OPENAI_MAX_RETRIES = 0
    pricing.forget()
    ModelPrice.objects.create(
        model_prefix="scripted-eval", input_per_million=Decimal(1), output_per_million=Decimal(2)
    )
    yield server
    pricing.forget()


def ask(agent: str, intent: str, query: str) -> Any:
    return tool_calls([(f"ask_{agent}", {"query": query, "intent": intent, "intent_count": 1})])


def cases_file(tmp_path: Path, *cases: tuple[str, list[str], dict[str, str]]) -> Path:
    path = tmp_path / "cases.jsonl"
    lines = [
        json.dumps({"input": text, "expected_intents": intents, "expected_entities": entities})
        for text, intents, entities in cases
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def evaluate(path: Path, *args: str) -> dict[str, Any]:
    out = StringIO()
    call_command("evaluate", str(path), "--reference-date", "2026-11-18", *args, "--json",
                 stdout=out)  # fmt: skip
    return json.loads(out.getvalue())


def test_llm_engine_scores_the_models_chain_and_a_failure_as_the_fallback(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.add(ask("scheduling", "book_job", BOOK), when=has_text("Pérez"))
    server.add(ask("scheduling", "book_job", OWED), when=has_text("García"))  # wrong
    server.add(status(400), when=has_text("abren"))  # not retried: the embedded reading stands
    book = (BOOK, ["book_job"], {"customer": "Pérez", "date": "2026-11-24", "time": "10:00"})
    path = cases_file(tmp_path, book, (OWED, ["payment_status"], {}), (HOURS, ["hours"], {}))
    out = tmp_path / "cases.out.jsonl"
    calls_before = ModelCall.objects.count()

    metrics = evaluate(
        path, "--engine", "llm", "--base-url", server.base_url, "--api-key", "local",
        "--model", "scripted-eval", "--per-case", str(out),
    )  # fmt: skip

    assert metrics["engine"] == "llm" and metrics["cases"] == 3
    assert metrics["chain_accuracy"] == pytest.approx(2 / 3, abs=1e-3)
    assert metrics["entity_f1"] == 1.0  # the model's step runs with the message's entities
    assert [row["chain_ok"] for row in metrics["per_case"]] == [True, False, True]
    assert [row["read_by"] for row in metrics["per_case"]] == ["model", "model", "fallback"]
    assert [row["fallback"] for row in metrics["per_case"]] == ["", "", "bad_request"]
    assert [row["model_calls"] for row in metrics["per_case"]] == [1, 1, 1]
    first = metrics["per_case"][0]
    assert (first["tokens_in"], first["tokens_out"]) == (20, 10)  # the scripted usage
    assert first["cost_usd"] == pytest.approx(0.00004)  # 20 × $1/M + 10 × $2/M
    usage = metrics["model_usage"]
    assert (usage["cases_read"], usage["calls"], usage["tokens_in"]) == (3, 3, 40)
    assert usage["cost_usd"] == pytest.approx(0.00008)  # the failed call cost nothing
    assert usage["fallbacks"] == {"bad_request": 1}
    assert usage["calls_median"] == 1 and usage["tokens_in_median"] == 20
    assert {r["model"] for r in server.requests} == {"scripted-eval"}
    assert ModelCall.objects.count() == calls_before  # the throwaway organisation's rows go too

    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == ["1", "2", "3"]
    owed = rows[1]
    assert (owed["input"], owed["engine"]) == (OWED, "llm")
    assert (owed["expected_intents"], owed["predicted_intents"]) == (["payment_status"],
                                                                    ["book_job"])  # fmt: skip
    assert (owed["expected_agents"], owed["predicted_agents"]) == (["financial"], ["scheduling"])
    assert owed["correct"] == {"chain": False, "intent_set": False, "agents": False,
                               "entities": None}  # fmt: skip
    # The router's candidates say what the embedded engine would have read.
    assert owed["segments"][0]["candidates"][0][0] == "payment_status"
    assert rows[0]["predicted_entities"] == book[2] and rows[0]["correct"]["entities"] is True


def test_hybrid_asks_the_model_only_below_a_gate(
    server: ScriptedServer, settings: Any, tmp_path: Path
) -> None:
    settings.OPENAI_API_KEY = "test-key"  # the configured endpoint, as a turn would use it
    settings.OPENAI_BASE_URL = server.base_url
    settings.OPENAI_MODEL = "scripted-eval"
    server.add(ask("customer", "search_customer", VAGUE), when=has_text(VAGUE))
    path = cases_file(tmp_path, (HOURS, ["hours"], {}), (VAGUE, ["search_customer"], {}))

    metrics = evaluate(path, "--engine", "hybrid")

    assert len(server.requests) == 1 and VAGUE in json.dumps(server.requests[0]["messages"])
    assert [row["read_by"] for row in metrics["per_case"]] == ["embedded", "model"]
    assert [row["model_calls"] for row in metrics["per_case"]] == [0, 1]
    assert metrics["model_usage"]["cases_read"] == 1 and metrics["chain_accuracy"] == 1.0
    assert metrics["endpoint"].startswith("Provider(") and "test-key" not in metrics["endpoint"]


def test_the_embedded_per_case_lines_have_the_routers_candidates(tmp_path: Path) -> None:
    path = cases_file(tmp_path, (BOOK, ["book_job"], {"customer": "Pérez"}))
    out = tmp_path / "out.jsonl"

    metrics = evaluate(path, "--per-case", str(out))

    (row,) = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert metrics["engine"] == "embedded" and metrics["model_usage"]["calls"] == 0
    assert row["segments"] == [{"text": BOOK, "candidates": row["segments"][0]["candidates"]}]
    assert row["segments"][0]["candidates"][0][0] == "book_job"
    assert row["correct"]["chain"] is True and row["model_calls"] == 0


def test_a_model_engine_without_a_model_is_a_clear_error(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = cases_file(tmp_path, (HOURS, ["hours"], {}))
    before = Organisation.objects.count()
    with pytest.raises(CommandError, match="--engine llm needs a model"):
        call_command("evaluate", str(path), "--engine", "llm")
    with pytest.raises(CommandError, match="--base-url needs --api-key"):
        call_command("evaluate", str(path), "--engine", "hybrid", "--base-url", server.base_url)
    with pytest.raises(CommandError, match="invalid choice"):
        call_command("evaluate", str(path), "--engine", "magic")
    assert server.requests == [] and Organisation.objects.count() == before


def test_the_text_report_adds_the_models_usage(server: ScriptedServer, tmp_path: Path) -> None:
    server.add(ask("general", "hours", HOURS))
    path = cases_file(tmp_path, (HOURS, ["hours"], {}))
    out = StringIO()

    call_command(
        "evaluate", str(path), "--engine", "llm", "--base-url", server.base_url,
        "--api-key", "local", "--model", "scripted-eval", stdout=out,
    )  # fmt: skip

    report = out.getvalue()
    assert "engine: llm" in report and "key=set" in report and "local" not in report
    assert "  calls                        1" in report
    assert "  cost_usd                     0.000040" in report
