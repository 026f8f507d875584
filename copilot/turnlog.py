"""A turn's events, buffered between its commit points and logged a step at a time.

A turn publishes ~10 events; logging each in its own transaction (a sequence number, a row, a
commit) was most of what a short turn cost. `TurnLog` is the turn's event sink instead: it
keeps what the turn emits and writes it at the turn's commit points with `eventlog.write` —
one `UPDATE … RETURNING` allocates all their sequence numbers, one `INSERT` stores them, in the
transaction of the commit point, and the live sends follow that commit.

The commit points, by the event that closes them:

- `agent_end`: a step's end, emitted inside the transaction that stores the step's `AgentRun`
  (copilot/orchestration/delegate.py) — the step's tool calls committed before it, and an
  approval it asked for is in the same batch (so logged before the turn pauses for it);
- `completed`: the answer (or the failure, or the interruption), in the transaction that stores
  the reply and finishes the turn.

`flush()` writes what is left at any other point (the runner calls it when a turn ends however
it ended; a failed write puts the events back). Nothing buffered is lost when the turn raises;
a process that dies after a commit has logged what that commit did.

Pairs the panel draws as one are folded in the buffer, where the later event finds its
start: `tool_start` + `tool_result` + `tool_end` become one `tool_result` (with the call's
`arguments` and `latency_ms`), `agent_start` + `agent_end` one `agent_start` carrying the
step's outcome (`success`, `yielded`, `latency_ms`, `clarifying`), at the start's place. A start
already written (a concurrent step's commit point came in between) is followed by its end as
before; readers take both shapes (copilot/answers.py, static/js/answers.js).

What the operator watches as it happens goes out at once as well, unsequenced and unlogged:
`thinking` (S3), each step's `agent_start` (its logged copy, folded with the end, finishes the
row the panel drew), and every `text` delta and `retract`, each text with `at`, its offset in the
turn's streamed text. Consecutive `text` of one speaker fold into one logged event (its `at`
is the first chunk's), so a socket that reconnects replays the text exactly; the panel appends
only what goes past what it already shows (static/js/copilot.js).
"""

from __future__ import annotations

import threading
from typing import Any, cast

from agents.events import Event
from copilot import eventlog

# Sent live as soon as emitted (then logged at the next commit point): a step's start too, so
# the panel shows a multi-step answer's steps as they run (O7), not only when each has ended.
LIVE_FIRST = frozenset({"thinking", "text", "retract", "agent_start"})
# The events that close a commit point: the log is written as soon as one is emitted.
CLOSES = frozenset({"agent_end", "completed"})
# A later event folds into the buffered event it finishes: (what it folds into, the result's type).
FOLDS = {
    "agent_end": ("agent_start", "agent_start"),
    "tool_result": ("tool_start", "tool_result"),
    "tool_end": ("tool_result", "tool_result"),
}
OPENS = frozenset({"agent_start", "tool_start", "tool_result"})  # what a later event may fold into


class TurnLog:
    """The event sink of one turn (thread-safe: concurrent steps emit from their threads)."""

    def __init__(self, organisation_id: int, conversation_id: int) -> None:
        self.organisation_id, self.conversation_id = organisation_id, conversation_id
        self.pending: list[dict[str, Any]] = []
        self.written: list[Event] = []  # what this turn logged, with its `seq`
        self._open: dict[tuple[str, str, str], int] = {}  # a foldable start → its place
        self._streamed = 0  # characters of text streamed so far: the next text's `at`
        self._buffer = threading.Lock()
        self._writing = threading.Lock()  # one flush at a time: seq order is buffer order

    def __call__(self, event: Event) -> None:
        with self._buffer:
            live = self._keep(dict(event))
        if live is not None:
            eventlog.broadcast(self.organisation_id, self.conversation_id, cast(Event, live))
        if event["type"] in CLOSES:
            self.flush()

    def flush(self) -> None:
        """Write what is buffered (in the caller's transaction, if any)."""
        with self._writing:
            with self._buffer:
                events, self.pending, self._open = self.pending, [], {}
            try:
                written = eventlog.write(
                    self.organisation_id, self.conversation_id, cast(list[Event], events)
                )
            except Exception:
                with self._buffer:  # kept for the next commit point (the failure is the caller's)
                    self.pending[:0] = events
                raise
            self.written.extend(written)

    def events(self) -> list[dict[str, Any]]:
        """The turn's events so far, logged and buffered, in order."""
        with self._buffer:
            return [*map(dict, self.written), *self.pending]

    def _keep(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """Buffer (or fold) the event; returns the copy to send live now, if any."""
        kind = event["type"]
        if kind in ("text", "retract"):
            event["at"] = self._streamed
            self._streamed += len(event.get("text", ""))
        live = dict(event) if kind in LIVE_FIRST else None
        if kind == "text" and self._continues(event):
            self.pending[-1]["text"] += event["text"]
            return live
        self._fold(event)
        return live

    def _continues(self, event: dict[str, Any]) -> bool:
        last = self.pending[-1] if self.pending else None
        return (
            last is not None and last["type"] == "text" and last.get("agent") == event.get("agent")
        )

    def _fold(self, event: dict[str, Any]) -> None:
        kind, agent, tool = event["type"], str(event.get("agent", "")), str(event.get("tool", ""))
        into, folded_as = FOLDS.get(kind, ("", kind))
        place = self._open.pop((into, agent, tool), None) if into else None
        if place is None:
            self.pending.append(event)
            place = len(self.pending) - 1
        else:
            self.pending[place] = {**self.pending[place], **event, "type": folded_as}
        if kind in OPENS:
            self._open[(self.pending[place]["type"], agent, tool)] = place
