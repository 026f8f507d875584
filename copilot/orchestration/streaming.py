"""Text of a turn on its way to the panel, and concurrent steps sharing one live slot (O7).

`TextStream` is the turn's single writer of `text` events: every part (the orchestrator's
preamble, each agent's answer, the closing lines) starts with a blank line after whatever was
shown before, so what streams reads exactly like the stored reply.

`run_concurrently` runs independent llm steps in threads. The first step to produce text gets the
live slot and streams as it goes; the others buffer. When the live step ends, the next one (in
the order they first produced text) flushes its buffer with a short simulated delay between
chunks and then streams live itself. Non-text events (agent and tool events, approvals) go out at
once from every thread.

A writer's `retract(reason)` says that what it wrote will not be part of the answer (its model
failed halfway; something else answers): a `retract` event marks the text that reached the panel,
and a concurrent step's text still in its buffer is dropped unseen. A writer that wrote nothing
retracts nothing.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

from django.conf import settings
from django.db import connections

from agents.context import EventSink
from agents.events import RetractEvent, TextEvent


class Writer(Protocol):
    """Where one part's text goes, chunk by chunk."""

    def __call__(self, text: str) -> None: ...

    def retract(self, reason: str) -> None:
        """What this writer wrote will not be part of the answer."""


class TextStream:
    """Writes a turn's text events; thread-safe; remembers what was shown, per part."""

    def __init__(self, emit: EventSink, turn_id: str) -> None:
        self._emit = emit
        self._turn_id = turn_id
        self._lock = threading.Lock()
        self.shown = False

    def write(self, text: str, *, agent: str = "", first: bool = False) -> None:
        if not text:
            return
        with self._lock:
            if first and self.shown:
                text = "\n\n" + text.lstrip("\n")
            event = TextEvent(type="text", turn_id=self._turn_id, text=text)
            if agent:
                event["agent"] = agent
            self._emit(event)
            self.shown = True

    def part(self, agent: str = "") -> Writer:
        """A writer for one new part: its first chunk is separated from what came before."""
        return _Part(self, agent)

    def retract(self, agent: str, reason: str) -> None:
        with self._lock:
            self._emit(
                RetractEvent(type="retract", turn_id=self._turn_id, agent=agent, reason=reason)
            )


class _Part:
    def __init__(self, stream: TextStream, agent: str) -> None:
        self._stream = stream
        self._agent = agent
        self._started = False

    def __call__(self, text: str) -> None:
        if not text:
            return
        self._stream.write(text, agent=self._agent, first=not self._started)
        self._started = True

    def retract(self, reason: str) -> None:
        if self._started:
            self._stream.retract(self._agent, reason)
            self._started = False  # whatever it writes next is a part of its own


@dataclass
class _Lane:
    key: int
    agent: str
    chunks: list[str] = field(default_factory=list)
    done: bool = False


@dataclass(frozen=True)
class _Retraction:
    reason: str


# What a concurrent step's writer enqueues: text, a retraction, or None when the step ended.
_Item = tuple[int, str | _Retraction | None]


class _LaneWriter:
    """A concurrent step's writer: it only enqueues; the pump decides what is shown."""

    def __init__(self, items: queue.Queue[_Item], key: int) -> None:
        self._items = items
        self._key = key

    def __call__(self, text: str) -> None:
        if text:
            self._items.put((self._key, text))

    def retract(self, reason: str) -> None:
        self._items.put((self._key, _Retraction(reason)))


class LiveSlot:
    """Orders the text of concurrent steps: one live, the others buffered then flushed.

    Producers (the step threads) only enqueue; `pump` (the graph's thread) decides what is
    shown, so the live-slot decision and the emission never race.
    """

    def __init__(self, stream: TextStream, delay_s: float) -> None:
        self._stream = stream
        self._delay = delay_s
        self._queue: queue.Queue[_Item] = queue.Queue()
        self.order: list[int] = []  # lane keys in the order their text reached the panel

    def writer(self, key: int) -> Writer:
        return _LaneWriter(self._queue, key)

    def finish(self, key: int) -> None:
        self._queue.put((key, None))

    def pump(self, lanes: dict[int, str]) -> None:
        """Emit until every lane finished (each producer calls `finish`, even when it fails)."""
        state = {key: _Lane(key, agent) for key, agent in lanes.items()}
        waiting: list[int] = []  # lanes that produced text, in order, after the live one
        live: int | None = None
        writers: dict[int, Writer] = {}

        def show(key: int, text: str) -> None:
            if key not in writers:
                writers[key] = self._stream.part(state[key].agent)
                self.order.append(key)
            writers[key](text)

        def promote() -> int | None:
            while waiting:
                key = waiting.pop(0)
                lane = state[key]
                for index, chunk in enumerate(lane.chunks):
                    if index:
                        time.sleep(self._delay)
                    show(key, chunk)
                lane.chunks.clear()
                if not lane.done:
                    return key
            return None

        def retract(key: int, reason: str) -> None:
            state[key].chunks.clear()  # buffered, never shown: dropped unseen
            if key in writers:
                writers[key].retract(reason)
            elif key in waiting:
                waiting.remove(key)

        while not all(lane.done for lane in state.values()):
            key, text = self._queue.get()
            lane = state[key]
            if isinstance(text, _Retraction):
                retract(key, text.reason)
                continue
            if text is None:
                lane.done = True
                if key == live:
                    live = promote()
                continue
            if live is None and not waiting:
                live = key
            if key == live:
                show(key, text)
                continue
            if key not in waiting:
                waiting.append(key)
            lane.chunks.append(text)
        # Lanes that buffered text but never became live (their live predecessor ended last).
        promote()


def run_concurrently[T](
    tasks: Sequence[tuple[str, Callable[[Writer], T]]], stream: TextStream
) -> tuple[list[T], list[int]]:
    """Run `(agent, fn(writer))` tasks in threads; returns their results in task order and the
    task indexes in the order their text was shown."""
    delay = float(getattr(settings, "COPILOT_BUFFER_FLUSH_DELAY_MS", 15)) / 1000
    slot = LiveSlot(stream, delay)
    results: dict[int, T] = {}
    errors: dict[int, BaseException] = {}

    def run(index: int, fn: Callable[[Writer], T]) -> None:
        try:
            results[index] = fn(slot.writer(index))
        except BaseException as exc:  # re-raised in the graph's thread below
            errors[index] = exc
        finally:
            connections.close_all()  # this thread's own database connections
            slot.finish(index)

    with ThreadPoolExecutor(max_workers=len(tasks), thread_name_prefix="copilot-step") as pool:
        for index, (_agent, fn) in enumerate(tasks):
            pool.submit(run, index, fn)
        slot.pump({i: agent for i, (agent, _fn) in enumerate(tasks)})
    if errors:
        raise next(iter(errors.values()))
    shown = slot.order + [i for i in range(len(tasks)) if i not in slot.order]
    return [results[i] for i in range(len(tasks))], shown


def concurrency_limit() -> int:
    return max(1, int(getattr(settings, "COPILOT_LLM_CONCURRENCY", 4)))
