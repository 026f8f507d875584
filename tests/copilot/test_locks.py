"""Per-conversation serialisation (S5): FIFO, org-prefixed keys, and Redis going away."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from django.conf import settings as django_settings

from copilot.locks import conversation_lock, key_prefix


def test_keys_are_prefixed_by_organisation() -> None:
    assert key_prefix(7, 42) == "capataz:org:7:conv:42"
    assert key_prefix(8, 42) != key_prefix(7, 42)


async def _hold_in_order(org_id: int) -> list[str]:
    order: list[str] = []

    async def hold(name: str, delay: float) -> None:
        async with conversation_lock(org_id, 1):
            order.append(f"{name}-in")
            await asyncio.sleep(delay)
            order.append(f"{name}-out")

    await asyncio.gather(hold("a", 0.05), hold("b", 0.01), hold("c", 0))
    return order


async def test_turns_wait_their_turn_in_arrival_order() -> None:
    assert await _hold_in_order(1) == ["a-in", "a-out", "b-in", "b-out", "c-in", "c-out"]


async def test_two_organisations_do_not_block_each_other() -> None:
    entered = asyncio.Event()

    async def slow() -> None:
        async with conversation_lock(1, 5):
            await asyncio.wait_for(entered.wait(), timeout=5)

    async def other_org() -> None:
        async with conversation_lock(2, 5):
            entered.set()

    await asyncio.gather(slow(), other_org())
    assert entered.is_set()


async def test_redis_going_away_falls_back_to_an_in_process_lock(settings: Any) -> None:
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    assert await _hold_in_order(3) == ["a-in", "a-out", "b-in", "b-out", "c-in", "c-out"]


@pytest.mark.skipif(not django_settings.REDIS_URL, reason="needs REDIS_URL")
async def test_redis_queue_is_left_clean() -> None:
    import redis.asyncio as aioredis

    assert await _hold_in_order(4) == ["a-in", "a-out", "b-in", "b-out", "c-in", "c-out"]
    client = aioredis.from_url(django_settings.REDIS_URL, decode_responses=True)
    keys = await client.keys(f"{key_prefix(4, 1)}:*")
    await client.aclose()
    assert keys == []


async def test_an_in_process_lock_is_forgotten_once_released() -> None:
    from copilot.locks import _local_locks

    await _hold_in_order(5)
    assert _local_locks[asyncio.get_running_loop()] == {}
