"""`migrate` itself installs the schedules: the real command, in a process of its own, on an
empty SQLite file — not `install` called by hand (Django sends post_migrate only to apps with a
models module, and a receiver connected to the wrong one never ran)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from capataz.schedules import SCHEDULES

ROOT = Path(settings.BASE_DIR)


def _migrate(var_dir: Path) -> None:
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{var_dir / 'capataz.sqlite3'}",
        "CAPATAZ_VAR_DIR": str(var_dir),
        "REDIS_URL": "",
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def _entries(var_dir: Path) -> dict[str, tuple[str, bool, int | None]]:
    """Each beat entry by its task: its name, whether it is on, its interval."""
    with sqlite3.connect(var_dir / "capataz.sqlite3") as db:
        rows = db.execute(
            "SELECT t.task, t.name, t.enabled, i.every FROM django_celery_beat_periodictask t "
            "LEFT JOIN django_celery_beat_intervalschedule i ON i.id = t.interval_id"
        ).fetchall()
    return {task: (name, bool(enabled), every) for task, name, enabled, every in rows}


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    var_dir = tmp_path_factory.mktemp("fresh")
    assert not (var_dir / "capataz.sqlite3").exists()
    _migrate(var_dir)
    return var_dir


def test_migrate_on_an_empty_database_installs_every_declared_schedule(migrated: Path) -> None:
    entries = _entries(migrated)
    for entry in SCHEDULES:
        _name, enabled, every = entries[entry.task]
        assert (enabled, every) == (True, entry.every_seconds)
    assert entries["copilot.recover_turns"][0] == "copiloto: recuperar turnos trabados"


def test_a_later_migrate_keeps_an_admins_edits_and_adds_no_duplicates(migrated: Path) -> None:
    with sqlite3.connect(migrated / "capataz.sqlite3") as db:
        db.execute(
            "UPDATE django_celery_beat_periodictask SET enabled = 0, "
            "interval_id = (SELECT id FROM django_celery_beat_intervalschedule WHERE every = 300) "
            "WHERE task = 'approvals.expire_due'"
        )
    before = _entries(migrated)
    assert before["approvals.expire_due"][1:] == (False, 300)

    _migrate(migrated)

    after = _entries(migrated)
    assert after["approvals.expire_due"] == (
        "aprobaciones: vencer las acciones expiradas",
        False,
        300,
    )
    assert after == before and len(after) == len(SCHEDULES)  # nothing changed, nothing twice
