"""common.sockets.send_to_group_soon: a turn's live events are queued, never waited for, and
reach the group in the order they were queued, even when one send fails or stalls."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from common import sockets


class Layer:
    def __init__(self, stall: float = 0.0, fail_first: bool = False) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.stall, self.fail_first = stall, fail_first
        self.done = threading.Event()
        self.expected = 0

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        if self.fail_first and not self.sent and not getattr(self, "failed", False):
            self.failed = True
            raise ConnectionError("redis went away")
        # The first send is the slowest: a sender that ran them side by side would reorder.
        await asyncio.sleep(self.stall if not self.sent else 0)
        self.sent.append((group, message))
        if len(self.sent) >= self.expected:
            self.done.set()


@pytest.fixture
def layer(monkeypatch: pytest.MonkeyPatch) -> Layer:
    fake = Layer()
    monkeypatch.setattr(sockets, "get_channel_layer", lambda: fake)
    monkeypatch.setattr(sockets, "_loop", None)  # this process's own loop, as in a worker
    return fake


def test_sends_keep_their_order(layer: Layer) -> None:
    layer.stall, layer.expected = 0.05, 20
    for n in range(20):
        assert sockets.send_to_group_soon("chat.o1.c1", {"n": n})
    assert layer.done.wait(5)
    assert [message["n"] for _group, message in layer.sent] == list(range(20))


def test_the_caller_never_waits_for_a_stalled_layer(layer: Layer) -> None:
    layer.stall, layer.expected = 1.0, 2
    started = time.monotonic()
    sockets.send_to_group_soon("chat.o1.c1", {"n": 1})
    sockets.send_to_group_soon("chat.o1.c1", {"n": 2})
    assert time.monotonic() - started < 0.9  # the turn goes on: a stall is 1 s a send
    assert layer.done.wait(5) and [m["n"] for _g, m in layer.sent] == [1, 2]


def test_a_failed_send_is_logged_and_the_next_ones_still_go(
    layer: Layer, caplog: pytest.LogCaptureFixture
) -> None:
    layer.fail_first, layer.expected = True, 2
    for n in range(3):
        sockets.send_to_group_soon("chat.o1.c1", {"n": n})
    assert layer.done.wait(5)
    assert [m["n"] for _g, m in layer.sent] == [1, 2]
    assert "live send to chat.o1.c1 failed" in caplog.text


def test_without_a_channel_layer_nothing_is_queued(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sockets, "get_channel_layer", lambda: None)
    assert sockets.send_to_group_soon("chat.o1.c1", {"n": 1}) is False
