"""Turns on a real Celery worker: another process runs the turn, and its events reach a socket of
this process through Redis. Runs only with REDIS_URL and a PostgreSQL DATABASE_URL (the worker
reads and writes the test database pytest-django created):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/capataz REDIS_URL=redis://127.0.0.1:6379/15 \\
        .venv/bin/python -m pytest -q -p no:cacheprovider tests/copilot/test_worker.py
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection

from capataz.celery import app
from copilot import eventlog
from copilot.models import Conversation, ConversationEvent, Message, Turn
from tests.conftest import Cast
from tests.copilot.test_consumer import _open, _receive, _send, _turn_events

ROOT = Path(__file__).resolve().parents[2]
CELERY = Path(sys.executable).parent / "celery"

pytestmark = [
    pytest.mark.usefixtures("default_agents"),
    pytest.mark.django_db(transaction=True),  # the worker must see the rows: committed
    pytest.mark.skipif(
        not settings.REDIS_URL
        or settings.DATABASES["default"]["ENGINE"].split(".")[-1] != "postgresql",
        reason="needs REDIS_URL and a PostgreSQL DATABASE_URL",
    ),
]


def _database_url() -> str:
    """The test database pytest-django created, as a URL for another process."""
    db = connection.settings_dict
    credentials = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    host = db.get("HOST") or "127.0.0.1"
    return f"postgres://{credentials}@{host}:{db.get('PORT') or 5432}/{db['NAME']}"


def _env(**extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "capataz.settings",
        "DATABASE_URL": _database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "LOG_LEVEL": "WARNING",
        # As the suite reads (tests/conftest.py): the registry's router, trained in a second,
        # not the corpus one (seconds alone, over a minute with both CI suites on two cores).
        "NLU_CORPUS": "false",
        **extra,
    }


@pytest.fixture
def queue(settings: Any) -> str:
    # A queue of this test's own: nothing another run left in the broker reaches this worker.
    name = f"turns-test-{uuid.uuid4().hex[:8]}"
    settings.COPILOT_TURN_QUEUE = name
    settings.COPILOT_TURN_RUNNER = "celery"
    return name


@pytest.fixture
def worker(transactional_db: None, queue: str, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A real worker on the test database; stopped (and its output shown on failure) after."""
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(CELERY), "-A", "capataz", "worker", "-Q", queue, "--pool=solo",
             "--loglevel=WARNING", "-n", f"{queue}@%h", "--without-mingle", "--without-gossip"],
            cwd=ROOT, env=_env(COPILOT_TURN_QUEUE=queue), stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        sys.stderr.write(log.read_text(errors="replace")[-3000:])


@pytest.fixture
def to_the_broker() -> Iterator[None]:
    # tests/conftest.py runs Celery tasks inline for the whole session; these go to Redis.
    was = app.conf.task_always_eager
    app.conf.task_always_eager = False
    yield
    app.conf.task_always_eager = was


@pytest.mark.usefixtures("to_the_broker")
async def test_a_turn_runs_on_the_worker_and_its_events_reach_the_socket(
    cast: Cast, conversation: Conversation, worker: subprocess.Popen[bytes]
) -> None:
    communicator = await _open(cast.operator, conversation.pk)
    await communicator.send_to(text_data=_send("¿cuál es el horario de atención?", client_id="w1"))
    accepted = await _receive(communicator)
    events = await _turn_events(communicator, timeout=90)  # the worker starts meanwhile
    await communicator.disconnect()

    assert worker.poll() is None, "the worker died"
    assert accepted["type"] == "accepted" and accepted["client_id"] == "w1"
    types = [event["type"] for event in events]
    assert types[0] == "thinking" and types[-1] == "completed" and "consulted" in types
    assert {event["turn_id"] for event in events} == {accepted["turn_id"]}
    assert [e["seq"] for e in [accepted, *events]] == list(
        range(accepted["seq"], accepted["seq"] + len(events) + 1)
    )

    def stored() -> tuple[Turn, list[tuple[str, str]], set[str]]:
        turn = Turn.objects.get(pk=accepted["turn_id"])
        rows = list(conversation.messages.order_by("pk").values_list("role", "text"))
        origins = set(
            ConversationEvent.objects.filter(turn_id=turn.pk)
            .exclude(type="accepted")
            .values_list("origin", flat=True)
        )
        return turn, rows, origins

    turn, rows, origins = await sync_to_async(stored)()
    assert turn.status == Turn.Status.DONE
    assert f":{worker.pid}:" in turn.runner  # claimed by the worker process
    assert origins and eventlog.PROCESS not in origins  # published there, not here
    assert rows == [
        (Message.Role.USER, "¿cuál es el horario de atención?"),
        (Message.Role.ASSISTANT, events[-1]["text"]),
    ]


def test_with_redis_unreachable_dispatch_says_so_at_once(queue: str) -> None:
    """The socket answers `deferred` instead of hanging: sending the job must not wait for the
    result backend's ~20 s of reconnection attempts (its results are not kept)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens here once the socket is closed
    code = (
        "import time; from copilot import tasks; started = time.monotonic();"
        "ok = tasks.dispatch(1, 1); print('RESULT', ok, round(time.monotonic() - started, 2))"
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, capture_output=True,
        text=True, timeout=120, env=_env(REDIS_URL=f"redis://127.0.0.1:{port}/0"),
    )  # fmt: skip
    result = next(line for line in done.stdout.splitlines() if line.startswith("RESULT"))
    _label, ok, seconds = result.split()

    assert ok == "False"
    assert float(seconds) < 5, done.stderr[-2000:]  # it was ~19 s with results kept
