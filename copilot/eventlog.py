"""Publishing a conversation's events: its log (with sequence numbers) and its live group.

`publish` stores the event in the conversation's log — the sequence number is allocated and the
row written in one transaction, so event N is committed before N+1 exists — and then sends it to
the conversation's channel-layer group, whose name carries the organisation and the conversation.
Every subscribed socket (any tab, any process) receives it; one that missed some asks the log for
what followed the last `seq` it saw (`events_after`).

The live send never fails nor slows a turn: it is queued on the loop's one sender, which keeps
the order (common/sockets.py `send_to_group_soon`); with the channel layer down the event is
still in the log, and subscribers catch up from it. Publishing is synchronous and must not
run on an event loop's own thread (the consumer calls the services through `sync_to_async`).

On the embedded default the channel layer lives in the web process's memory: events published by
another process (a Celery worker, a management command) reach its sockets through `tail`, which
forwards the log rows other processes wrote.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from typing import Any, cast

from asgiref.sync import sync_to_async
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.db import connection, transaction

from agents.events import Event

# The loop bridge every live send uses, this log's and the other organisation groups' alike.
from common.sockets import send_to_group, send_to_group_soon, use_loop  # noqa: F401 - re-exported: the panel's socket and ASGI set the loop here
from copilot.models import Conversation, ConversationEvent

logger = logging.getLogger(__name__)

# Which process published an event (host, pid and a random part: pids come back).
PROCESS = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
GROUP_MESSAGE = "chat.event"  # the consumer's handler: chat_event
TAIL_INTERVAL_S = 0.25
REPLAY_LIMIT = 2000


def group_name(organisation_id: int, conversation_id: int) -> str:
    """The conversation's channel-layer group, scoped by its organisation."""
    return f"chat.o{organisation_id}.c{conversation_id}"


def publish(organisation_id: int, conversation_id: int, event: Event) -> Event:
    """Log one event with the conversation's next sequence number, then send it live.

    Inside a caller's transaction the live send waits for its commit (a subscriber must never
    see an event the log does not have). Returns the event with its `seq`."""
    [sequenced] = write(organisation_id, conversation_id, [event])
    return sequenced


def write(organisation_id: int, conversation_id: int, events: list[Event]) -> list[Event]:
    """Log events, in order, in one transaction — one `UPDATE … RETURNING` allocates their
    sequence numbers, one `INSERT` stores them — and send them live once it commits."""
    if not events:
        return []
    # No savepoint inside a caller's transaction: a failure here fails the caller's too.
    with transaction.atomic(savepoint=False):
        first = _next_seq(conversation_id, len(events)) - len(events) + 1
        sequenced = [cast(Event, {**event, "seq": first + i}) for i, event in enumerate(events)]
        ConversationEvent.objects.bulk_create(
            [_row(organisation_id, conversation_id, event) for event in sequenced]
        )
    transaction.on_commit(lambda: _broadcast_all(organisation_id, conversation_id, sequenced))
    return sequenced


def _row(organisation_id: int, conversation_id: int, event: Event) -> ConversationEvent:
    payload = {key: value for key, value in event.items() if key != "seq"}
    return ConversationEvent(
        organisation_id=organisation_id, conversation_id=conversation_id, seq=event["seq"],
        turn_id=str(event.get("turn_id", "")), type=event["type"], payload=payload,
        origin=PROCESS,
    )  # fmt: skip


def _next_seq(conversation_id: int, count: int = 1) -> int:
    """Allocate the next `count` sequence numbers and return the last; the row stays locked
    until the caller commits."""
    table = connection.ops.quote_name(Conversation._meta.db_table)
    column = connection.ops.quote_name("event_seq")
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET {column} = {column} + %s WHERE id = %s RETURNING {column}",  # noqa: S608
            [count, conversation_id],
        )
        row = cursor.fetchone()
    if row is None:
        raise Conversation.DoesNotExist(conversation_id)
    return int(row[0])


def _broadcast_all(organisation_id: int, conversation_id: int, events: list[Event]) -> None:
    for event in events:
        broadcast(organisation_id, conversation_id, event)


def broadcast(organisation_id: int, conversation_id: int, event: Event) -> bool:
    """Send a logged event to the conversation's group, in order, without waiting for the
    channel layer (a failure is logged: subscribers catch up from the log)."""
    message = {"type": GROUP_MESSAGE, "event": dict(event)}
    return send_to_group_soon(group_name(organisation_id, conversation_id), message)


def events_after(conversation_id: int, seq: int, limit: int = REPLAY_LIMIT) -> list[Event]:
    """The logged events after `seq`, in order."""
    rows = ConversationEvent.objects.filter(conversation_id=conversation_id, seq__gt=seq)
    return [
        cast(Event, {**row["payload"], "seq": row["seq"]})
        for row in rows.order_by("seq").values("payload", "seq")[:limit]
    ]


def last_seq(conversation_id: int) -> int:
    value = Conversation.objects.filter(pk=conversation_id).values_list("event_seq", flat=True)
    return int(value.first() or 0)


# --- the embedded default: other processes' events ------------------------------------------

_tails: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}


def needs_tail() -> bool:
    """Only an in-memory channel layer needs it (Redis carries every process's sends)."""
    return isinstance(get_channel_layer(), InMemoryChannelLayer)


async def start_tail() -> None:
    """Forward, on this loop, the log rows other processes write from now on (once per loop)."""
    loop = asyncio.get_running_loop()
    task = _tails.get(loop)
    if task is None or task.done():
        watermark = await sync_to_async(_newest_row, thread_sensitive=False)()
        if (task := _tails.get(loop)) is None or task.done():
            _tails[loop] = loop.create_task(_tail(watermark), name="copilot-event-tail")


async def _tail(watermark: int) -> None:
    layer = get_channel_layer()
    assert layer is not None
    while True:
        await asyncio.sleep(TAIL_INTERVAL_S)
        try:
            rows = await sync_to_async(_foreign_rows, thread_sensitive=False)(watermark)
        except Exception:  # the database is busy or gone: try again on the next tick
            logger.warning("event tail: could not read the log", exc_info=True)
            continue
        newest, forwarded = rows
        for organisation_id, conversation_id, event in forwarded:
            message = {"type": GROUP_MESSAGE, "event": event}
            await layer.group_send(group_name(organisation_id, conversation_id), message)
        watermark = max(watermark, newest)


def _newest_row() -> int:
    try:
        return int(ConversationEvent.objects.order_by("-pk").values_list("pk", flat=True)[:1][0])
    except IndexError:
        return 0
    finally:
        connection.close()


def _foreign_rows(after: int) -> tuple[int, list[tuple[int, int, dict[str, Any]]]]:
    """The newest row id (SQLite commits rows in id order) and the other processes' rows."""
    try:
        rows = list(
            ConversationEvent.objects.filter(pk__gt=after)
            .order_by("pk")
            .values_list("pk", "origin", "organisation_id", "conversation_id", "payload", "seq")[
                :2000
            ]
        )
        newest = rows[-1][0] if rows else after
        forwarded = [
            (org, conv, {**payload, "seq": seq})
            for _pk, origin, org, conv, payload, seq in rows
            if origin != PROCESS
        ]
        return newest, forwarded
    finally:
        connection.close()
