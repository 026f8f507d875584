"""Write nlu/data/encoder.npz: the encoder's vectors of the shipped registry's examples and of
the corpus's out-of-scope lines, so no process embeds them (nlu.encoder). Run it after editing
agents/data/default_agents.json or the corpus; `--check` only says how many are missing."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from copilot.router_cache import shipped_encoder_texts
from nlu import encoder


class Command(BaseCommand):
    help = "Write (or --check) the shipped encoder vectors of the default registry and corpus."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--check", action="store_true", help="only count missing texts")

    def handle(self, *args: Any, **options: Any) -> None:
        texts = shipped_encoder_texts()
        if options["check"]:
            missing = encoder.missing_from_shipped(texts)
            self.stdout.write(f"{len(texts)} texts, {missing} missing from {encoder.SHIPPED.name}")
            if missing:
                raise CommandError("run manage.py encoder_cache to write them")
            return
        count = encoder.save_shipped(texts)
        self.stdout.write(f"wrote {count} vectors to {encoder.SHIPPED}")
