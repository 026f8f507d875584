"""The embedded broker (capataz/broker.py): a message file that does not parse is set aside in
quarantine and logged, and the next good message is still delivered; messages are never seen
half-written; kombu's control folder lives under VAR_DIR with the rest."""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from kombu import Connection

from capataz import broker
from capataz.broker import PARTIAL, Transport


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, Path]:
    names = ("queue", "processed", "quarantine", "control")
    made = {name: tmp_path / name for name in names}
    for name in ("queue", "processed"):
        made[name].mkdir()
    return made


@pytest.fixture
def name() -> str:
    # kombu keeps a process-wide record of bindings: a queue name another test bound would
    # not be bound again in this test's control folder.
    return f"jobs-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def connection(folders: dict[str, Path]) -> Iterator[Connection]:
    options = {
        "data_folder_in": str(folders["queue"]),
        "data_folder_out": str(folders["queue"]),
        "processed_folder": str(folders["processed"]),
        "quarantine_folder": str(folders["quarantine"]),
        "control_folder": str(folders["control"]),
    }
    with Connection("filesystem://", transport=Transport, transport_options=options) as conn:
        yield conn


def _plant(queue_dir: Path, stamp: int, queue: str, content: bytes) -> Path:
    # Named as kombu names messages, sorting before any message put now: read first.
    path = queue_dir / f"{stamp:013d}_planted.{queue}.msg"
    path.write_bytes(content)
    return path


def test_a_corrupt_message_is_quarantined_and_the_next_one_delivered(
    connection: Connection, name: str, folders: dict[str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    queue = connection.SimpleQueue(name)
    garbage = _plant(folders["queue"], 1, name, b'{"body": "eyJh", "content-enc')
    empty = _plant(folders["queue"], 2, name, b"")
    binary = _plant(folders["queue"], 3, name, b"\xff\xfe\x00garbage")
    not_a_message = _plant(folders["queue"], 4, name, b"[1, 2]")
    queue.put({"task": "copilot.recover_turns", "n": 1})

    with caplog.at_level(logging.ERROR, logger="capataz.broker"):
        message = queue.get(timeout=5)

    assert message.payload == {"task": "copilot.recover_turns", "n": 1}
    message.ack()
    kept = sorted(p.name for p in folders["quarantine"].iterdir())
    assert kept == sorted(p.name for p in (garbage, empty, binary, not_a_message))
    assert (folders["quarantine"] / garbage.name).read_bytes() == b'{"body": "eyJh", "content-enc'
    assert list(folders["queue"].iterdir()) == []
    assert len([r for r in caplog.records if "set aside" in r.getMessage()]) == 4
    queue.close()


def test_a_message_is_never_visible_under_its_final_name_half_written(
    connection: Connection, name: str, folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = connection.SimpleQueue(name)
    seen: list[tuple[str, list[str]]] = []
    real_replace = os.replace

    def spying_replace(src: str, dst: str) -> None:
        # Written, about to be renamed into place: what a consumer listing the folder finds.
        seen.append((Path(src).read_text(), sorted(p.name for p in folders["queue"].iterdir())))
        real_replace(src, dst)

    monkeypatch.setattr(broker.os, "replace", spying_replace)
    queue.put({"n": 1})
    monkeypatch.undo()

    ((written, listed),) = seen
    assert json.loads(written)["properties"]["delivery_info"]["routing_key"] == name
    assert len(listed) == 1 and listed[0].endswith(PARTIAL)
    assert queue.get(timeout=5).payload == {"n": 1}
    queue.close()


def test_the_embedded_broker_keeps_its_folders_under_var() -> None:
    from capataz.celery import app

    if settings.REDIS_URL:
        pytest.skip("the embedded broker is used without REDIS_URL")
    with app.connection_for_write() as conn:
        assert isinstance(conn.transport, Transport)
        options = conn.transport_options
    celery_dir = Path(settings.VAR_DIR) / "celery"
    assert Path(options["control_folder"]) == celery_dir / "control"
    assert Path(options["quarantine_folder"]) == celery_dir / "quarantine"
