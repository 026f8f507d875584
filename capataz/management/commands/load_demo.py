"""`manage.py load_demo [--reset]`: the demo organisation, its records and three logins."""

from __future__ import annotations

import time
from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from capataz.demo import load_demo
from capataz.demo.data import PASSWORD
from copilot.router_cache import forget, router_for


class Command(BaseCommand):
    help = (
        "Carga la organización demo «Climatización Río de la Plata» (slug demo). Idempotente: "
        "si ya está cargada no cambia nada; --reset la borra y la vuelve a cargar."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--reset",
            action="store_true",
            help=(
                "Borrar la organización demo (solo esa) y volver a cargarla; también "
                "restablece la contraseña de los tres usuarios demo."
            ),
        )

    def handle(self, *args: Any, reset: bool = False, **options: Any) -> None:
        started = time.perf_counter()
        result = load_demo(reset=reset)
        elapsed = time.perf_counter() - started
        for warning in result.warnings:
            self.stderr.write(self.style.WARNING(warning))
        org = result.organisation
        state = "cargada" if result.seeded else "ya estaba cargada, sin cambios"
        self.stdout.write(
            self.style.SUCCESS(f"{org.name} ({org.slug}): {state} en {elapsed:.1f} s")
        )
        # Train the organisation's reading now: a corpus router is kept on disk under VAR_DIR,
        # where daphne and the worker find it, so the first message after `make run` does not
        # wait seconds for it. This process keeps no copy: whoever reads messages here next
        # (a test, a shell) builds its own from the registry it then has.
        if settings.NLU_CORPUS:
            started = time.perf_counter()
            router_for(org)
            forget(org.pk)
            elapsed = time.perf_counter() - started
            self.stdout.write(f"Copiloto listo para leer mensajes en {elapsed:.1f} s")
        width = max(len(label) for label in result.counts)
        for label, count in result.counts.items():
            self.stdout.write(f"  {label.ljust(width)}  {count:>5}")
        self.stdout.write("")
        self.stdout.write(f"Entrá en {settings.SITE_URL}/login/ con (contraseña «{PASSWORD}»):")
        for username, role in result.users:
            self.stdout.write(f"  {username.ljust(10)} {role}")
