"""Tools of the general agent. `price_list` is shared: it lives in the financial agent's module."""

from __future__ import annotations

import datetime
from typing import Any

from django.utils.translation import gettext_noop

from agents.context import TurnContext
from agents.registry import Category, ToolResult, success, tool

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def _hours(business_hours: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per weekday, Monday first; an empty or missing range means closed."""
    days: list[dict[str, Any]] = []
    for day in WEEKDAYS:
        span = business_hours.get(day) or []
        if len(span) == 2:
            days.append({"day": day, "open": span[0], "close": span[1], "closed": False})
        else:
            days.append({"day": day, "open": None, "close": None, "closed": True})
    return days


def _open_now(hours: list[dict[str, Any]], moment: datetime.datetime) -> bool:
    today = hours[moment.weekday()]
    if today["closed"]:
        return False
    clock = moment.strftime("%H:%M")
    return bool(today["open"] <= clock < today["close"])


@tool(
    category=Category.SAFE,
    description=gettext_noop(
        "The company's name, opening hours per weekday (and whether it is open now), phone, "
        "email and address."
    ),
)
def org_info(ctx: TurnContext) -> ToolResult:
    org = ctx.organisation
    hours = _hours(org.business_hours or {})
    return success(
        org.name,
        name=org.name,
        phone=org.phone,
        email=org.email,
        address=org.address,
        timezone=org.timezone,
        hours=hours,
        open_now=_open_now(hours, ctx.local_now),
        today=ctx.today.isoformat(),
        weekday=WEEKDAYS[ctx.today.weekday()],
    )
