"""The migrated template the suite copies is named by what shapes a migrated database."""

from __future__ import annotations

from pathlib import Path

from tests.database_template import fingerprint


def _project(root: Path) -> None:
    (root / "agents" / "migrations").mkdir(parents=True)
    (root / "agents" / "migrations" / "0001_initial.py").write_text("operations = []\n")
    (root / "agents" / "data").mkdir()
    (root / "agents" / "data" / "default_agents.json").write_text("[]")
    (root / "tests").mkdir()
    (root / "tests" / "test_x.py").write_text("def test(): pass\n")


def test_a_migration_or_a_data_file_names_a_new_template(tmp_path: Path) -> None:
    _project(tmp_path)
    before = fingerprint(tmp_path)
    (tmp_path / "agents" / "migrations" / "0002_more.py").write_text("operations = []\n")
    after_migration = fingerprint(tmp_path)
    (tmp_path / "agents" / "data" / "default_agents.json").write_text('[{"name": "fleet"}]')
    after_data = fingerprint(tmp_path)
    assert len({before, after_migration, after_data}) == 3


def test_tests_and_caches_do_not_change_the_template(tmp_path: Path) -> None:
    _project(tmp_path)
    before = fingerprint(tmp_path)
    (tmp_path / "tests" / "test_y.py").write_text("def test(): pass\n")
    (tmp_path / "agents" / "__pycache__").mkdir()
    (tmp_path / "agents" / "__pycache__" / "x.py").write_text("")
    assert fingerprint(tmp_path) == before
