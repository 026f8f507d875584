"""Tool parameters: the JSON schema a model reads and the coercion `Tool.run` applies, both
derived from the keyword-only parameters' type hints so they cannot drift apart.

Supported hints: str, int, float, bool, Decimal (a string), date (ISO), datetime (ISO; without an
offset it is the organisation's wall clock), time (HH:MM), Literal[...] (an enum), list[X], and
`X | None` for an optional argument.

Python values of the hinted type pass as they are (a sub-agent hands `runner.call` a `date`, a
`datetime`, a `Decimal`, a `time`); only what a model sends (text, JSON numbers) is parsed.
"""

from __future__ import annotations

import datetime
import inspect
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Literal
from zoneinfo import ZoneInfo

_SCALARS: dict[type, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    Decimal: {"type": "string", "pattern": r"^-?\d+(\.\d+)?$"},
    datetime.date: {"type": "string", "format": "date"},
    datetime.datetime: {"type": "string", "format": "date-time"},
    datetime.time: {"type": "string", "pattern": r"^\d{1,2}:\d{2}$"},
}


def _split_optional(hint: Any) -> tuple[Any, bool]:
    """(inner type, allows None) for `X | None`; anything else is returned as is."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        members = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        if len(members) != 1:
            raise TypeError(f"only `X | None` unions are supported, got {hint!r}")
        return members[0], True
    return hint, False


def _schema_for(hint: Any) -> dict[str, Any]:
    if hint in _SCALARS:
        return dict(_SCALARS[hint])
    origin = typing.get_origin(hint)
    if origin is Literal:
        values = list(typing.get_args(hint))
        kind = "integer" if all(isinstance(v, int) for v in values) else "string"
        return {"type": kind, "enum": values}
    if origin is list:
        (item,) = typing.get_args(hint)
        return {"type": "array", "items": _schema_for(item)}
    raise TypeError(f"unsupported tool parameter type {hint!r}")


@dataclass(frozen=True)
class Param:
    name: str
    hint: Any
    nullable: bool
    required: bool
    default: Any


def params_of(func: Callable[..., Any]) -> list[Param]:
    hints = typing.get_type_hints(func)
    params: list[Param] = []
    for p in inspect.signature(func).parameters.values():
        if p.kind is not inspect.Parameter.KEYWORD_ONLY:
            continue
        inner, nullable = _split_optional(hints[p.name])
        required = p.default is inspect.Parameter.empty
        default = None if required else p.default
        params.append(Param(p.name, inner, nullable, required, default))
    return params


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal | datetime.date | datetime.time):
        return str(value) if isinstance(value, Decimal) else value.isoformat()
    return value


def build_schema(params: list[Param], docs: dict[str, str]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for p in params:
        prop = _schema_for(p.hint)
        prop["description"] = docs[p.name]
        if not p.required and p.default is not None:
            prop["default"] = _json_default(p.default)
        properties[p.name] = prop
    return {
        "type": "object",
        "properties": properties,
        "required": [p.name for p in params if p.required],
        "additionalProperties": False,
    }


class BadArgument(Exception):
    pass


_TRUE = {"true", "1", "yes", "si", "sí"}
_FALSE = {"false", "0", "no"}


def _coerce_scalar(hint: Any, value: Any, tz: ZoneInfo) -> Any:
    # Models often send numbers as strings and vice versa; accept the unambiguous cases only.
    if hint is str:
        if isinstance(value, str):
            return value.strip()
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        raise BadArgument("must be a string")
    if hint is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise BadArgument("must be true or false")
    if hint is int:
        if isinstance(value, bool):
            raise BadArgument("must be an integer")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
            return int(value)
        raise BadArgument("must be an integer")
    if hint is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        try:
            return float(str(value).replace(",", "."))
        except ValueError:
            raise BadArgument("must be a number") from None
    if hint is Decimal:
        if isinstance(value, Decimal) and value.is_finite():
            return value
        if isinstance(value, bool):
            raise BadArgument("must be a decimal number")
        try:
            number = Decimal(str(value).strip())
        except InvalidOperation:
            raise BadArgument("must be a decimal number such as 1500.50") from None
        if not number.is_finite():
            raise BadArgument("must be a decimal number such as 1500.50")
        return number
    if hint is datetime.datetime:
        if isinstance(value, datetime.datetime):
            return value if value.tzinfo else value.replace(tzinfo=tz)
        try:
            moment = datetime.datetime.fromisoformat(str(value).strip())
        except ValueError:
            raise BadArgument("must be an ISO date-time such as 2026-11-24T10:00") from None
        # A wall-clock time without an offset is read in the organisation's timezone.
        return moment if moment.tzinfo else moment.replace(tzinfo=tz)
    if hint is datetime.date:
        if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
            return value
        try:
            return datetime.date.fromisoformat(str(value).strip()[:10])
        except ValueError:
            raise BadArgument("must be an ISO date such as 2026-11-24") from None
    if hint is datetime.time:
        if isinstance(value, datetime.time):
            return value.replace(second=0, microsecond=0, tzinfo=None)
        match = re.fullmatch(r"\s*(\d{1,2}):(\d{2})(?::\d{2})?\s*", str(value))
        if not match or int(match[1]) > 23 or int(match[2]) > 59:
            raise BadArgument("must be a time such as 10:30")
        return datetime.time(int(match[1]), int(match[2]))
    raise BadArgument(f"has an unsupported type {hint!r}")


def coerce(hint: Any, value: Any, tz: ZoneInfo) -> Any:
    origin = typing.get_origin(hint)
    if origin is Literal:
        allowed = typing.get_args(hint)
        if value in allowed:
            return value
        if isinstance(value, str) and value.strip().lower() in allowed:
            return value.strip().lower()
        if isinstance(value, int | float) and not isinstance(value, bool):
            # 21 or 10.50 for an IVA rate spelled "21" / "10.5".
            spelled = f"{Decimal(str(value)).normalize():f}"
            if spelled in allowed:
                return spelled
        raise BadArgument(f"must be one of {', '.join(map(str, allowed))}")
    if origin is list:
        (item,) = typing.get_args(hint)
        if isinstance(value, str) and item is str:
            value = [value]  # a lone string where a list is expected is a one-item list
        if not isinstance(value, list):
            raise BadArgument("must be a list")
        return [coerce(item, v, tz) for v in value]
    return _coerce_scalar(hint, value, tz)
