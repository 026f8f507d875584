"""Where a paused turn waits: LangGraph's checkpointer, in the project's own database.

A turn whose step filed an action for approval pauses after its answer (the graph's `hold` node);
its state stays in a checkpoint until a manager's decision resumes it — in any process, after any
restart. PostgreSQL uses LangGraph's Postgres saver on a small connection pool, SQLite its SQLite
saver on the same database file Django uses; both keep their own tables there.

Thread ids carry the organisation and the conversation: `org:<o>:conv:<c>:turn:<t>`. State is
serialised with an allowlist of the project's own state classes (nothing else is revived).
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

from django.db import connection
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

# The classes a turn's state is made of: the only ones a checkpoint may bring back.
STATE_CLASSES: tuple[tuple[str, str], ...] = (
    ("agents.base", "Step"),
    ("agents.base", "Outcome"),
    ("agents.base", "Mutation"),
    ("agents.base", "Clarification"),
    ("agents.base", "Chain"),
    ("copilot.orchestration.clarify", "Pending"),
    ("copilot.orchestration.obligations", "Obligation"),
    ("copilot.orchestration.memory", "WorkingMemory"),
    ("copilot.orchestration.memory", "RecentMessage"),
    ("copilot.orchestration.state", "Reading"),
    ("copilot.orchestration.state", "Route"),
    ("copilot.orchestration.state", "Delegation"),
    ("copilot.orchestration.state", "StepRun"),
    ("copilot.orchestration.state", "Waiting"),
    ("copilot.orchestration.state", "Followup"),
    ("nlu.tone", "Signals"),
    ("nlu.values", "Understanding"),
    ("nlu.values", "Task"),
    ("nlu.values", "Entities"),
    ("nlu.values", "Directive"),
    ("nlu.values", "IntentSpec"),  # the reading's and the delegation's specs
)

_saver: BaseCheckpointSaver[Any] | None = None
_saver_for: str = ""
_lock = threading.Lock()


def thread_id(organisation_id: int, conversation_id: int, turn_id: str) -> str:
    return f"org:{organisation_id}:conv:{conversation_id}:turn:{turn_id}"


def serializer() -> JsonPlusSerializer:
    return JsonPlusSerializer(allowed_msgpack_modules=STATE_CLASSES)


def saver() -> BaseCheckpointSaver[Any]:
    """The process's checkpointer for the database Django is using now (made on first use)."""
    global _saver, _saver_for
    target = _target()
    with _lock:
        if _saver is None or _saver_for != target:
            _saver = _open(target)
            _saver_for = target
        elif isinstance(_saver, SqliteSaver) and not _has_tables(_saver):
            # The file was replaced under us (a restored copy of the database): set up again.
            _saver.is_setup = False
            _saver.setup()
        return _saver


def _has_tables(sqlite: SqliteSaver) -> bool:
    with sqlite.lock:
        found = sqlite.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'checkpoints'"
        ).fetchone()
    return found is not None


def _target() -> str:
    settings = connection.settings_dict
    if connection.vendor == "postgresql":
        return _conninfo(settings)
    return str(settings["NAME"])


def _conninfo(settings: dict[str, Any]) -> str:
    parts = {
        "dbname": settings.get("NAME"),
        "user": settings.get("USER"),
        "password": settings.get("PASSWORD"),
        "host": settings.get("HOST"),
        "port": settings.get("PORT"),
    }
    return " ".join(f"{key}={value}" for key, value in parts.items() if value)


def _open(target: str) -> BaseCheckpointSaver[Any]:
    if connection.vendor == "postgresql":
        pool = ConnectionPool(
            target, min_size=1, max_size=4, open=True,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        )  # fmt: skip
        postgres = PostgresSaver(pool, serde=serializer())  # type: ignore[arg-type]
        postgres.setup()
        return postgres
    database = sqlite3.connect(target, timeout=20, check_same_thread=False)
    database.execute("PRAGMA journal_mode=WAL")
    sqlite = SqliteSaver(database, serde=serializer())
    sqlite.setup()
    return sqlite


def forget(organisation_id: int, conversation_id: int, turn_id: str) -> None:
    """A finished turn's checkpoints are of no further use."""
    saver().delete_thread(thread_id(organisation_id, conversation_id, turn_id))


def reset() -> None:
    """Drop this process's saver (its next use opens a new one), as a restart would."""
    global _saver, _saver_for
    with _lock:
        old, _saver, _saver_for = _saver, None, ""
    if isinstance(old, SqliteSaver) or (
        isinstance(old, PostgresSaver) and isinstance(old.conn, ConnectionPool)
    ):
        old.conn.close()
