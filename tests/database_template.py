"""A migrated test database made once and copied, instead of migrated by every test process.

Migrating an empty database costs about 25 s of CPU (66 migrations, many of them SQLite table
rebuilds); CI used to pay it once per pytest-xdist worker and once per browser session, on both
backends: seven times a run. Now the first process that needs a test database migrates a
*template* and every process copies it (PostgreSQL: `CREATE DATABASE … TEMPLATE`; SQLite: the
backup API), then Django's own set-up runs over the copy with `keepdb` — its `migrate` finds
nothing to apply — and the teardown drops the copy as before.

The template's name carries a hash of everything that shapes a migrated database: the code and
data of the project's apps (migrations import models and read data files), the Django version
and the engine. A change to any of them names a new template, and the stale ones of the same
checkout are dropped when it is made. Processes that start together take a file lock: one
builds, under a temporary name renamed when complete, and the others wait and copy; a process
killed mid-build leaves only a temporary name nobody reads.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import django
from django.conf import settings
from django.db import connections

ROOT = Path(__file__).resolve().parent.parent
SKIPPED = {"tests", "bench", "static", "templates", "locale", "var", ".venv", ".git", ".ci"}
SHAPING = (".py", ".json", ".csv", ".yaml", ".yml")
CLONE_ATTEMPTS = 20


def fingerprint(root: Path = ROOT) -> str:
    """A hash of the project's code and data (not its tests), Django's version and the engine."""
    digest = hashlib.sha256(f"{django.get_version()}|{_engine()}".encode())
    for path in sorted(_shaping_files(root)):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _shaping_files(root: Path) -> Iterator[Path]:
    for top in root.iterdir():
        if top.name in SKIPPED or top.name.startswith(".") or not top.is_dir():
            continue
        for path in top.rglob("*"):
            if path.suffix in SHAPING and "__pycache__" not in path.parts:
                yield path


def _engine() -> str:
    return str(settings.DATABASES["default"]["ENGINE"])


def _sqlite() -> bool:
    return _engine() == "django.db.backends.sqlite3"


def template_name(test_name: str, mark: str) -> str:
    """Beside the test database (SQLite: in its folder), named by the fingerprint."""
    if _sqlite():
        return str(Path(test_name).with_name(f"test-template-{mark}.sqlite3"))
    return f"{_pg_stem()}{mark}"


def _pg_stem() -> str:
    return f"test_{settings.DATABASES['default']['NAME']}_tpl_"


def copy_test_database(alias: str = "default") -> None:
    """Make this process's test database a copy of the template (built first if missing)."""
    connection: Any = connections[alias]
    test_name = connection.creation._get_test_db_name()
    template = template_name(test_name, fingerprint())
    with _lock(template):
        if not _exists(connection, template):
            _build(connection, template)
    _copy(connection, template, test_name)


@contextlib.contextmanager
def _lock(template: str) -> Iterator[None]:
    lock_dir = Path(settings.VAR_DIR) if _sqlite() else Path("/tmp")
    lock_dir.mkdir(parents=True, exist_ok=True)
    with open(lock_dir / f"{Path(template).name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _exists(connection: Any, name: str) -> bool:
    if _sqlite():
        return Path(name).exists()
    with connection._nodb_cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        return cursor.fetchone() is not None


def _build(connection: Any, template: str) -> None:
    """Migrate a database under a temporary name, then give it the template's name."""
    partial = f"{template}.part{os.getpid()}" if _sqlite() else f"{template}_part{os.getpid()}"
    test_settings = connection.settings_dict.setdefault("TEST", {})
    saved = connection.settings_dict["NAME"], test_settings.get("NAME")
    test_settings["NAME"] = partial
    try:
        connection.creation.create_test_db(verbosity=0, autoclobber=True)
        if _sqlite():  # everything into the main file before it is renamed
            with connection.cursor() as cursor:
                cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        connection.close()
    finally:
        _restore_settings(connection, *saved)
    _drop_stale(connection, template)
    if _sqlite():
        os.replace(partial, template)
        return
    with connection._nodb_cursor() as cursor:
        cursor.execute(f'ALTER DATABASE "{partial}" RENAME TO "{template}"')


def _restore_settings(connection: Any, name: str, test_name: str | None) -> None:
    for settings_dict in (connection.settings_dict, settings.DATABASES[connection.alias]):
        settings_dict["NAME"] = name
        settings_dict.setdefault("TEST", {})["NAME"] = test_name


def _drop_stale(connection: Any, template: str) -> None:
    """This checkout's templates of other fingerprints (a partial one may still be building)."""
    if _sqlite():
        for path in Path(template).parent.glob("test-template-*.sqlite3"):
            if str(path) != template:
                path.unlink(missing_ok=True)
        return
    with connection._nodb_cursor() as cursor:
        cursor.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", [f"{_pg_stem()}%"])
        for (name,) in cursor.fetchall():
            if name != template and "_part" not in name:
                cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')


def _copy(connection: Any, template: str, test_name: str) -> None:
    if _sqlite():
        Path(test_name).unlink(missing_ok=True)
        source, target = sqlite3.connect(template), sqlite3.connect(test_name)
        with contextlib.closing(source), contextlib.closing(target):
            source.backup(target)
        return
    for attempt in range(CLONE_ATTEMPTS):  # another process's copy may be reading the template
        try:
            with connection._nodb_cursor() as cursor:
                cursor.execute(f'DROP DATABASE IF EXISTS "{test_name}"')
                cursor.execute(f'CREATE DATABASE "{test_name}" TEMPLATE "{template}"')
            return
        except Exception:
            if attempt == CLONE_ATTEMPTS - 1:
                raise
            time.sleep(0.5)


# --- what a flush puts back --------------------------------------------------------------------
#
# A transactional test ends with Django's `flush`, which empties every table and then sends
# post_migrate so content types, permissions and the declared schedules are made again: about
# 0.2 s of queries after each of several hundred tests, and the rows the migrations wrote (the
# tool catalogue, the schedules) come back only as far as post_migrate remakes them. Instead the
# set-up keeps a copy of every table the migrated database has rows in (`zz_kept_<n>`, tables
# no model names, so no flush touches them) and a flush puts those rows back, ids and all: each
# transactional test starts from the database as migrated, in a handful of INSERT … SELECT.

KEPT_PREFIX = "zz_kept_"
_kept: dict[str, list[tuple[str, str]]] = {}


def keep_migrated_rows(alias: str = "default") -> None:
    """Copy the rows of the freshly set-up test database aside (once per process)."""
    connection: Any = connections[alias]
    quote = connection.ops.quote_name
    kept: list[tuple[str, str]] = []
    with connection.cursor() as cursor:
        tables = connection.introspection.django_table_names(only_existing=True)
        for table in sorted(tables):
            cursor.execute(f"SELECT 1 FROM {quote(table)} LIMIT 1")
            if cursor.fetchone() is None:
                continue
            copy = f"{KEPT_PREFIX}{len(kept)}"
            cursor.execute(f"DROP TABLE IF EXISTS {quote(copy)}")
            cursor.execute(f"CREATE TABLE {quote(copy)} AS SELECT * FROM {quote(table)}")
            kept.append((table, copy))
    _kept[alias] = kept


def put_back_migrated_rows(alias: str) -> bool:
    """After a flush of every table: the kept rows back in place. False: nothing kept here."""
    from django.db import transaction

    if alias not in _kept:
        return False
    connection: Any = connections[alias]
    quote = connection.ops.quote_name
    with transaction.atomic(using=alias), connection.cursor() as cursor:
        for table, copy in _kept[alias]:
            cursor.execute(f"INSERT INTO {quote(table)} SELECT * FROM {quote(copy)}")
        # A flush that reset the sequences (`call_command("flush")`'s default; PostgreSQL's
        # TRUNCATE … RESTART IDENTITY) would hand out the ids just put back: each sequence
        # moves past its table's rows. SQLite numbers past the largest id by itself.
        for statement in _sequences_past_rows(connection, {table for table, _ in _kept[alias]}):
            cursor.execute(statement)
    return True


def _sequences_past_rows(connection: Any, tables: set[str]) -> list[str]:
    from django.apps import apps
    from django.core.management.color import no_style

    if connection.vendor == "sqlite":
        return []
    models = [m for m in apps.get_models(include_auto_created=True) if m._meta.db_table in tables]
    return list(connection.ops.sequence_reset_sql(no_style(), models))
