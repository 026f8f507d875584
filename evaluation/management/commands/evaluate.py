"""`manage.py evaluate FILE.jsonl [--json] [--reference-date D] [--org SLUG] [--train T.jsonl]`."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from evaluation.services import EvaluationError, evaluate_file


class Command(BaseCommand):
    help = "Evaluate the router on a JSONL file of cases and print accuracy, F1 and latency."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--reference-date", help="YYYY-MM-DD that relative dates resolve to")
        parser.add_argument("--org", help="evaluate this organisation's registry")
        parser.add_argument("--train", type=Path, help="train a throwaway router on this JSONL")

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
        try:
            metrics = evaluate_file(
                options["file"],
                reference_date=reference,
                org_slug=options["org"],
                train_path=options["train"],
            )
        except EvaluationError as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(metrics, ensure_ascii=False))
        else:
            self._print_report(metrics)

    def _print_report(self, metrics: dict[str, Any]) -> None:
        for key in (
            "cases",
            "chain_accuracy",
            "intent_set_accuracy",
            "agent_accuracy",
            "intent_f1",
            "entity_f1",
            "latency_ms_p50",
            "latency_ms_p95",
            "train_seconds",
        ):
            self.stdout.write(f"{key:>22}: {metrics[key]}")
        self.stdout.write("\nper intent (precision / recall / support):")
        for intent, row in metrics["per_intent"].items():
            self.stdout.write(
                f"  {intent:<28} {row['precision']:.3f} / {row['recall']:.3f} / {row['support']}"
            )
