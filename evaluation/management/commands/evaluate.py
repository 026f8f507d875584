"""`manage.py evaluate FILE.jsonl [--json] [--reference-date D] [--org SLUG] [--train T.jsonl]
[--engine embedded|llm|hybrid] [--base-url URL --api-key KEY] [--model M] [--per-case OUT]`."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from evaluation.reading import ENGINES
from evaluation.services import Endpoint, EvaluationError, evaluate_file

SUMMARY = (
    "cases", "engine", "chain_accuracy", "intent_set_accuracy", "agent_accuracy", "intent_f1",
    "entity_f1", "latency_ms_p50", "latency_ms_p95", "train_seconds",
)  # fmt: skip


class Command(BaseCommand):
    help = "Evaluate an engine on a JSONL file of cases and print accuracy, F1, latency and cost."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--reference-date", help="YYYY-MM-DD that relative dates resolve to")
        parser.add_argument("--org", help="evaluate this organisation's registry")
        parser.add_argument("--train", type=Path, help="train a throwaway router on this JSONL")
        parser.add_argument("--engine", choices=ENGINES, default="embedded")
        parser.add_argument("--base-url", default="", help="an OpenAI-compatible endpoint")
        parser.add_argument("--api-key", default="", help="its key (needed with --base-url)")
        parser.add_argument("--model", default="", help="the orchestrator's model")
        parser.add_argument("--per-case", type=Path, help="write one JSON line per case here")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            reference = (
                datetime.date.fromisoformat(options["reference_date"])
                if options["reference_date"]
                else timezone.localdate()
            )
        except ValueError as exc:
            raise CommandError("--reference-date must be YYYY-MM-DD") from exc
        if options["org"] and options["train"]:
            raise CommandError("--org and --train exclude each other")
        endpoint = Endpoint(
            engine=options["engine"], base_url=options["base_url"], api_key=options["api_key"],
            model=options["model"],
        )  # fmt: skip
        try:
            report = evaluate_file(
                options["file"], reference_date=reference, org_slug=options["org"],
                train_path=options["train"], endpoint=endpoint,
            )  # fmt: skip
        except EvaluationError as exc:
            raise CommandError(str(exc)) from exc
        if options["per_case"]:
            with options["per_case"].open("w", encoding="utf-8") as out:
                out.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in report.rows)
        if options["json"]:
            self.stdout.write(json.dumps(report.metrics, ensure_ascii=False))
        else:
            self._print_report(report.metrics)

    def _print_report(self, metrics: dict[str, Any]) -> None:
        for key in SUMMARY:
            self.stdout.write(f"{key:>22}: {metrics[key]}")
        if metrics["engine"] != "embedded":
            self.stdout.write(f"\nmodel usage ({metrics['endpoint']}):")
            for key, value in metrics["model_usage"].items():
                shown = f"{value:.6f}" if key.startswith("cost") else value  # not 4e-05
                self.stdout.write(f"  {key:<28} {shown}")
        self.stdout.write("\nper intent (precision / recall / support):")
        for intent, row in metrics["per_intent"].items():
            self.stdout.write(
                f"  {intent:<28} {row['precision']:.3f} / {row['recall']:.3f} / {row['support']}"
            )
