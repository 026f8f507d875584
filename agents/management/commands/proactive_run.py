"""Run the proactive agent's schedules now, for one organisation (what the admin's "Run now"
does): `manage.py proactive_run <org slug> [--detector maintenance_due ...]`."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.models import Detector
from agents.proactive.services import detector_run
from business.models import Organisation


class Command(BaseCommand):
    help = "Run the proactive schedules of an organisation now and print what each found."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("organisation", help="The organisation's slug.")
        parser.add_argument(
            "--detector", action="append", choices=Detector.values,
            help="Only this schedule (repeatable); all of them by default.",
        )  # fmt: skip

    def handle(self, *args: Any, **options: Any) -> None:
        organisation = Organisation.objects.filter(slug=options["organisation"]).first()
        if organisation is None:
            raise CommandError(f"no organisation {options['organisation']!r}")
        for detector in options["detector"] or Detector.values:
            run = detector_run(
                detector=detector, organisation_id=organisation.pk, trigger="command"
            )
            if run is None:
                continue
            line = (
                f"{detector}: {run.status}, found {run.found}, new {run.created}, "
                f"expired {run.expired}, {run.duration_ms:.0f} ms {run.details.get('kinds', {})}"
            )
            self.stdout.write(line + (f" — {run.error}" if run.error else ""))
