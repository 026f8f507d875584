"""Typed tool results (issue 25.4): what a tool found or did, as Python values, and its one JSON
form.

A migrated tool returns `done(summary, value)` (agents/registry.py), `value` a frozen dataclass
that subclasses `Result`. The `ToolResult` carries both: `value`, which the agent's handlers
and phrasing read with `Kind.of(result)` (None for a failed, held or screened-out call, or
another kind), and `data`, which is `value.as_json()` — what a model reads, what a step's line,
the records of a `tool_result` event, a ToolCall row and the customer screen see. `as_json` is
the fields in their declared order, each as JSON: a nested result by its own `as_json`, a list
item by item, a mapping value by value, a moment as its local ISO minute
(`2026-11-23T09:00-03:00`, the turn's clock: tools store it already local), a day as its ISO
date, a Decimal as its plain digits (`"150000.00"`, `"10.5"`: money is stored quantized to the
cent, rates and quantities normalized). So a migrated tool's JSON is byte for byte what its dict
was.

Tools not yet migrated return `success(summary, **data)`: `value` None, `data` as before.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, fields
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from agents.registry import ToolResult


@dataclass(frozen=True)
class Result:
    """A tool's typed result; subclasses declare its fields in the order its JSON lists them."""

    def as_json(self) -> dict[str, Any]:
        return {field.name: to_json(getattr(self, field.name)) for field in fields(self)}

    @classmethod
    def of(cls, result: ToolResult) -> Self | None:
        """The call's value when it is one of these (a call that did its work)."""
        value = result.value
        return value if isinstance(value, cls) else None


def to_json(value: Any) -> Any:
    """One field's JSON form."""
    if isinstance(value, Result):
        return value.as_json()
    if isinstance(value, list | tuple):
        return [to_json(item) for item in value]
    if isinstance(value, dict):
        return {key: to_json(item) for key, item in value.items()}
    if isinstance(value, Decimal):
        return f"{value:f}"
    if isinstance(value, datetime.datetime):
        return value.isoformat(timespec="minutes")
    if isinstance(value, datetime.date):
        return value.isoformat()
    return value
