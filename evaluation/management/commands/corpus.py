"""`manage.py corpus --out DIR [--org SLUG] [--seed N]`: the generated corpus as train, dev and
test JSONL files that `manage.py evaluate` scores (relative dates against 2026-11-18)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.corpus import CorpusError, corpus_lines, write_splits
from nlu.corpus.lexicon import REFERENCE_DATE


class Command(BaseCommand):
    help = "Write the generated training corpus as train/dev/test JSONL (split by phrase family)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", type=Path, required=True, help="directory for the files")
        parser.add_argument("--org", help="use this organisation's records and registry")
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            lines = corpus_lines(options["org"], seed=options["seed"])
        except CorpusError as exc:
            raise CommandError(str(exc)) from exc
        written = write_splits(lines, options["out"])
        for split, count in written.items():
            self.stdout.write(f"{options['out'] / f'{split}.jsonl'}: {count} lines")
        self.stdout.write(f"evaluate with --reference-date {REFERENCE_DATE.isoformat()}")
