"""Socket plumbing: group sends from worker threads on the web process's loop, and read-only
sockets on one group (the live approvals count, the suggestions count).

A `GroupConsumer` subclass says which group a signed-in user may join (`admit`; the
organisation's version, with its tenancy check, is `business/sockets.py`) and what it sends on
connect and on each group message. It closes with 4401 for a visitor and 4403 for someone not
admitted, and takes no frames: those pages act through forms. Without a channel layer it still
accepts and sends its first frame; the page polls.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Coroutine
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
SEND_TIMEOUT_S = 5.0

_loop: asyncio.AbstractEventLoop | None = None  # the web process's event loop, when it has one
_private: asyncio.AbstractEventLoop | None = None  # a loop of our own for other processes
_private_lock = threading.Lock()


# --- the event loop every live send runs on --------------------------------------------------


def send_to_group(group: str, message: dict[str, Any]) -> bool:
    """A group send from a worker thread, on the web process's loop; False (logged) when the
    channel layer failed — what is sent this way must also be readable from the database."""
    layer = get_channel_layer()
    if layer is None:
        return False
    try:
        _run(layer.group_send(group, message))
    except Exception as exc:
        logger.warning("live send to %s failed: %s", group, exc)
        return False
    return True


def send_to_group_soon(group: str, message: dict[str, Any]) -> bool:
    """A group send the caller does not wait for: queued on the loop, sent in the order queued
    (one sender per loop), a failure logged. For what the caller has already stored (a
    conversation's event log): a turn never waits on the channel layer, nor stalls while Redis
    is away. False when there is no channel layer."""
    if get_channel_layer() is None:
        return False
    loop = _loop_off_this_thread()
    loop.call_soon_threadsafe(_queue_send, loop, group, message)
    return True


_queues: dict[asyncio.AbstractEventLoop, asyncio.Queue[tuple[str, dict[str, Any]]]] = {}


def _queue_send(loop: asyncio.AbstractEventLoop, group: str, message: dict[str, Any]) -> None:
    queue = _queues.get(loop)
    if queue is None:
        queue = _queues[loop] = asyncio.Queue()
        loop.create_task(_sender(queue))
    queue.put_nowait((group, message))


async def _sender(queue: asyncio.Queue[tuple[str, dict[str, Any]]]) -> None:
    """Sends the loop's queued group messages one after another: their order is kept."""
    while True:
        group, message = await queue.get()
        layer = get_channel_layer()
        try:
            if layer is not None:
                await asyncio.wait_for(layer.group_send(group, message), SEND_TIMEOUT_S)
        except Exception as exc:  # the layer failed: the log still has it
            logger.warning("live send to %s failed: %s", group, exc)
        finally:
            queue.task_done()


@atexit.register
def _flush_at_exit() -> None:
    """A process that ends (a management command, a worker shutting down) sends what it queued
    on its own loop first, for at most SEND_TIMEOUT_S."""
    loop, queue = _private, _queues.get(_private) if _private is not None else None
    if loop is None or queue is None or loop.is_closed() or not loop.is_running():
        return
    with contextlib.suppress(Exception):  # nothing more to do at exit
        asyncio.run_coroutine_threadsafe(queue.join(), loop).result(timeout=SEND_TIMEOUT_S)


def use_loop(loop: asyncio.AbstractEventLoop) -> None:
    """The web process's loop: sends from its worker threads run there (the in-memory channel
    layer is bound to it). A consumer calls this when a socket connects."""
    global _loop
    _loop = loop


def _target_loop() -> asyncio.AbstractEventLoop:
    global _private
    if _loop is not None and not _loop.is_closed():
        return _loop
    with _private_lock:
        if _private is None or _private.is_closed():
            _private = asyncio.new_event_loop()
            threading.Thread(
                target=_private.run_forever, name="copilot-events", daemon=True
            ).start()
        return _private


def _loop_off_this_thread() -> asyncio.AbstractEventLoop:
    """The loop sends run on, which must not be the one running this thread (a send waited for
    there would deadlock; one queued there would run only after the caller returns)."""
    loop = _target_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        raise RuntimeError("publish from a worker thread, not from the event loop itself")
    return loop


def _run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    try:
        loop = _loop_off_this_thread()
    except RuntimeError:
        coroutine.close()
        raise
    future = asyncio.run_coroutine_threadsafe(coroutine, loop)
    try:
        return future.result(timeout=SEND_TIMEOUT_S)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise


# --- the read-only group sockets -------------------------------------------------------------


class GroupConsumer(AsyncWebsocketConsumer):  # type: ignore[misc]  # channels ships no types
    group = ""

    def admit(self, user: Any, session: Any) -> str | None:
        """The group this signed-in user joins, or None to refuse. Runs on a worker thread, so
        it may read the database; `session` is None without the session middleware."""
        raise NotImplementedError

    async def hello(self) -> None:
        """The first frame, sent once the socket is accepted."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        group = await database_sync_to_async(self.admit)(user, self.scope.get("session"))
        if group is None:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        use_loop(asyncio.get_running_loop())  # sends from worker threads reach this loop
        self.group = group
        try:
            await self.channel_layer.group_add(self.group, self.channel_name)
        except Exception as exc:  # no live channel: the page still works, by polling or reloading
            logger.warning("%s: no live channel (%s)", self.group, exc)
            self.group = ""
        await self.accept()
        await self.hello()

    async def disconnect(self, code: int) -> None:
        if self.group:
            try:
                await self.channel_layer.group_discard(self.group, self.channel_name)
            except Exception:
                logger.debug("group_discard failed", exc_info=True)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Frames are not commands here: the page's forms act."""
