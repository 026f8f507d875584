"""Text of a turn on its way to the panel, and concurrent steps sharing one live slot (O7).

`TextStream` is the turn's single writer of `text` events: every part (the orchestrator's
preamble, each agent's answer, the closing lines) starts with a blank line after whatever was
shown before, so what streams reads exactly like the stored reply.

`run_concurrently` runs independent llm steps in threads. The first step to produce text gets the
live slot and streams as it goes; the others buffer. When the live step ends, the next one (in
the order they first produced text) flushes its buffer with a short simulated delay between
chunks and then streams live itself. Non-text events (agent and tool events, approvals) go out at
once from every thread.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connections

from agents.context import EventSink
from agents.events import TextEvent

Writer = Callable[[str], None]


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
        started = False

        def write(text: str) -> None:
            nonlocal started
            if not text:
                return
            self.write(text, agent=agent, first=not started)
            started = True

        return write


@dataclass
class _Lane:
    key: int
    agent: str
    chunks: list[str] = field(default_factory=list)
    done: bool = False


class LiveSlot:
    """Orders the text of concurrent steps: one live, the others buffered then flushed.

    Producers (the step threads) only enqueue; `pump` (the graph's thread) decides what is
    shown, so the live-slot decision and the emission never race.
    """

    def __init__(self, stream: TextStream, delay_s: float) -> None:
        self._stream = stream
        self._delay = delay_s
        self._queue: queue.Queue[tuple[int, str | None]] = queue.Queue()
        self.order: list[int] = []  # lane keys in the order their text reached the panel

    def writer(self, key: int) -> Writer:
        return lambda text: self._queue.put((key, text)) if text else None

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

        while not all(lane.done for lane in state.values()):
            key, text = self._queue.get()
            lane = state[key]
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
