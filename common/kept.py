"""Values kept between turns by key (an organisation's id), for a few seconds (issue 26.5).

A turn used to read afresh rows an admin changes a few times a month: an organisation's agents
and A/B tests (agents/cache.py), its model provider (llm/provider.py). `Kept` holds one value
per key and reads it again once `seconds()` have passed — for what other processes saved; a
change in this process calls `forget` and is seen at once. A read that began before a `forget`
is not kept (it may hold the old rows). `seconds() <= 0` reads on every call. Plain Python, so
any floor may use it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable


class Kept[T]:
    def __init__(self, seconds: Callable[[], float]) -> None:
        self._seconds = seconds
        self._values: dict[Hashable, tuple[float, T]] = {}
        self._lock = threading.Lock()
        self._generation = 0  # moves on every forget

    def get(self, key: Hashable, read: Callable[[], T]) -> T:
        """The kept value for `key`, or `read()`'s (kept when nothing changed meanwhile)."""
        ttl = self._seconds()
        kept = self._values.get(key)
        if kept is not None and time.monotonic() - kept[0] < ttl:
            return kept[1]
        began = self._generation
        value = read()
        with self._lock:
            if ttl > 0 and began == self._generation:
                self._values[key] = (time.monotonic(), value)
        return value

    def forget(self, key: Hashable | None = None) -> None:
        """Drop one key's value, or (None) every key's."""
        with self._lock:
            self._generation += 1
            if key is None:
                self._values.clear()
            else:
                self._values.pop(key, None)
