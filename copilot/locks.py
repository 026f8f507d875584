"""Per-conversation serialisation (S5): one turn at a time, in arrival order.

With `REDIS_URL` set, a FIFO queue of tickets in Redis plus a lock with a heartbeat serialises a
conversation across every daphne process and Celery worker. On the embedded default an in-process
`asyncio.Lock` (FIFO-fair) per conversation does the same within the one web process.

Keys are prefixed by organisation: `capataz:org:<org>:conv:<id>:queue|lock|alive:<ticket>`.
If Redis goes away mid-flight, the turn is not lost: it falls back to the in-process lock and
logs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

logger = logging.getLogger(__name__)

LOCK_TTL_MS = 15_000  # a holder that stops heart-beating loses the lock after this
HEARTBEAT_S = 5.0
POLL_S = 0.02
WAIT_TIMEOUT_S = 300.0

_local_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _LocalEntry]] = (
    weakref.WeakKeyDictionary()
)
_redis_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
    weakref.WeakKeyDictionary()
)

# Release only our own lock: compare-and-delete in one step.
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


class LockUnavailable(Exception):
    """The conversation could not be claimed in time (another turn holds it too long)."""


def key_prefix(organisation_id: int, conversation_id: int) -> str:
    return f"capataz:org:{organisation_id}:conv:{conversation_id}"


@dataclass
class _LocalEntry:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0  # holders and waiters; the entry goes when the last one leaves


@contextlib.asynccontextmanager
async def _local_lock(key: str) -> AsyncIterator[None]:
    """A FIFO in-process lock per key, forgotten once nobody holds or waits for it."""
    locks = _local_locks.setdefault(asyncio.get_running_loop(), {})
    entry = locks.setdefault(key, _LocalEntry())
    entry.users += 1
    try:
        async with entry.lock:
            yield
    finally:
        entry.users -= 1
        if entry.users == 0:
            locks.pop(key, None)


def _redis() -> Any:
    import redis.asyncio as aioredis

    loop = asyncio.get_running_loop()
    client = _redis_clients.get(loop)
    if client is None:
        client = aioredis.from_url(
            settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2, decode_responses=True
        )
        _redis_clients[loop] = client
    return client


@contextlib.asynccontextmanager
async def conversation_lock(organisation_id: int, conversation_id: int) -> AsyncIterator[None]:
    """Hold the conversation for one turn; later turns wait their turn in arrival order."""
    prefix = key_prefix(organisation_id, conversation_id)
    if not settings.REDIS_URL:
        async with _local_lock(prefix):
            yield
        return
    ticket = uuid.uuid4().hex
    try:
        # Callers in this process reach this line in arrival order; the FIFO local lock keeps
        # that order into the Redis queue (concurrent pipelines could overtake each other).
        async with _local_lock(f"{prefix}:enqueue"):
            await _redis_enqueue(prefix, ticket)
    except Exception as exc:
        if not _is_redis_error(exc):
            raise
        logger.warning("conversation lock: Redis unavailable (%s), serialising in-process", exc)
        async with _local_lock(prefix):
            yield
        return
    heartbeat = asyncio.create_task(_heartbeat(prefix, ticket))
    try:
        await _redis_acquire(prefix, ticket)
        yield
    finally:
        heartbeat.cancel()
        with contextlib.suppress(Exception):
            await _redis_release(prefix, ticket)


def _is_redis_error(exc: BaseException) -> bool:
    from redis.exceptions import RedisError

    return isinstance(exc, RedisError | OSError)


async def _redis_enqueue(prefix: str, ticket: str) -> None:
    client = _redis()
    async with client.pipeline(transaction=True) as pipe:
        pipe.set(f"{prefix}:alive:{ticket}", "1", px=LOCK_TTL_MS)
        pipe.rpush(f"{prefix}:queue", ticket)
        pipe.pexpire(f"{prefix}:queue", int(WAIT_TIMEOUT_S * 1000) + LOCK_TTL_MS)
        await pipe.execute()


async def _redis_acquire(prefix: str, ticket: str) -> None:
    client = _redis()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_TIMEOUT_S
    while loop.time() < deadline:
        head = await client.lindex(f"{prefix}:queue", 0)
        if head == ticket:
            if await client.set(f"{prefix}:lock", ticket, nx=True, px=LOCK_TTL_MS):
                return
            holder = await client.get(f"{prefix}:lock")
            if holder == ticket:
                return
        elif head is not None and not await client.exists(f"{prefix}:alive:{head}"):
            # The ticket ahead of us belongs to a process that died: drop it.
            await client.lrem(f"{prefix}:queue", 1, head)
            continue
        elif head is None:
            # Our ticket vanished (queue expired): queue again at the end.
            await _redis_enqueue(prefix, ticket)
        await asyncio.sleep(POLL_S)
    await _redis_release(prefix, ticket)
    raise LockUnavailable(prefix)


async def _heartbeat(prefix: str, ticket: str) -> None:
    client = _redis()
    while True:
        await asyncio.sleep(HEARTBEAT_S)
        with contextlib.suppress(Exception):
            await client.pexpire(f"{prefix}:alive:{ticket}", LOCK_TTL_MS)
            if await client.get(f"{prefix}:lock") == ticket:
                await client.pexpire(f"{prefix}:lock", LOCK_TTL_MS)


async def _redis_release(prefix: str, ticket: str) -> None:
    client = _redis()
    await client.eval(_RELEASE, 1, f"{prefix}:lock", ticket)
    await client.lrem(f"{prefix}:queue", 1, ticket)
    await client.delete(f"{prefix}:alive:{ticket}")
