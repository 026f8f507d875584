"""`manage.py verify_trace [--organisation SLUG] [--all-breaks]`: is each trace chain intact?

Each organisation's conversation chains are anchored first (what the scheduled job would do
next), so the check covers every seal written until now.

Exits 1 when any organisation's chain is broken (or an ended turn has no seal), naming the seal,
the turn and the row where it breaks; 0 when every chain checked is intact.
"""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from business.models import Organisation
from copilot.ledger import Break, Verdict, anchor_chains, verify_chain


class Command(BaseCommand):
    help = (
        "Verifica la cadena de hashes de las trazas de cada organización (o de una): dice si "
        "está intacta y, si no, en qué sello, turno y fila se rompe."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--organisation", help="slug of one organisation (default: all)")
        parser.add_argument(
            "--all-breaks", action="store_true", help="list every break, not only the first"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        organisations = Organisation.objects.order_by("pk")
        if options["organisation"]:
            organisations = organisations.filter(slug=options["organisation"])
            if not organisations.exists():
                raise CommandError(f"no organisation with slug {options['organisation']!r}")
        broken = 0
        for organisation in organisations:
            anchor_chains(organisation.pk)
            verdict = verify_chain(organisation.pk, first_only=not options["all_breaks"])
            if verdict.intact:
                self.stdout.write(f"{organisation.slug}: intact ({verdict.seals} seals)")
                self._redacted(verdict)
                continue
            broken += 1
            self.stdout.write(f"{organisation.slug}: BROKEN ({verdict.seals} seals)")
            self._redacted(verdict)
            for item in verdict.breaks:
                self.stdout.write(f"  {_where(item)}: {item.reason} — {item.detail}")
            for turn_id in verdict.unsealed[:20]:
                self.stdout.write(f"  turn {turn_id}: ended without a seal")
            if len(verdict.unsealed) > 20:
                self.stdout.write(f"  … and {len(verdict.unsealed) - 20} more unsealed turns")
        if broken:
            raise SystemExit(1)

    def _redacted(self, verdict: Verdict) -> None:
        for item in verdict.redacted:
            self.stdout.write(
                f"  seal #{item.seq} turn {item.turn_id}: redacted by {item.by} at {item.at} "
                f"(redaction #{item.entry}: {'; '.join(item.rows)})"
            )


def _where(item: Break) -> str:
    chain = f"conversation {item.chain} " if item.chain is not None else ""
    turn = f" turn {item.turn_id}" if item.turn_id else ""
    return f"{chain}seal #{item.seq}{turn}"
