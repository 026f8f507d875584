"""What a model call cost, from the price table editable in admin (`ModelPrice`).

The table is tiny and read on every call, so it is cached for a minute per process; saving a
price in this process drops the cache at once.
"""

from __future__ import annotations

import threading
import time
from decimal import Decimal

from llm.models import ModelPrice

MILLION = Decimal(1_000_000)
_TTL_S = 60.0
_lock = threading.Lock()
_cache: tuple[float, list[tuple[str, Decimal, Decimal]]] | None = None


def _table() -> list[tuple[str, Decimal, Decimal]]:
    """(prefix, input, output) rows, longest prefix first."""
    global _cache
    with _lock:
        if _cache is not None and time.monotonic() - _cache[0] < _TTL_S:
            return _cache[1]
    rows = sorted(
        ModelPrice.objects.values_list("model_prefix", "input_per_million", "output_per_million"),
        key=lambda row: len(row[0]),
        reverse=True,
    )
    with _lock:
        _cache = (time.monotonic(), rows)
    return rows


def forget() -> None:
    """Drop the cached table (a price was edited)."""
    global _cache
    with _lock:
        _cache = None


def cost(model: str, tokens_in: int, tokens_out: int) -> Decimal:
    """USD for the call; 0 when no prefix matches the model (an unpriced local model)."""
    for prefix, per_in, per_out in _table():
        if model.startswith(prefix):
            return (per_in * tokens_in + per_out * tokens_out) / MILLION
    return Decimal(0)
