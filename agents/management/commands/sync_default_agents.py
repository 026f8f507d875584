"""Apply agents/data/default_agents.json to the default (template) agents without a migration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.defaults import DefaultsFileError
from agents.services import agents_install_defaults, agents_sync_defaults
from business.models import Organisation


class Command(BaseCommand):
    help = (
        "Update the default agents from the defaults file. Organisation copies are never "
        "overwritten; --install-missing gives every organisation the default agents it lacks."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--file", type=Path, help="Another defaults file (for testing).")
        parser.add_argument(
            "--install-missing",
            action="store_true",
            help="Also copy default agents an organisation does not have yet.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = agents_sync_defaults(path=options["file"])
        except DefaultsFileError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Default agents: {report}")
        if options["install_missing"]:
            for organisation in Organisation.objects.order_by("pk"):
                created = agents_install_defaults(organisation=organisation)
                if created:
                    names = ", ".join(agent.name for agent in created)
                    self.stdout.write(f"{organisation.slug}: installed {names}")
