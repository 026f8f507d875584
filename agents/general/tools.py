"""Tools of the general agent, and their typed results (agents/results.py). `price_list` is
shared: it lives in the financial agent's module."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext_noop

from agents.context import TurnContext
from agents.registry import Category, ToolResult, done, tool
from agents.results import Result

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@dataclass(frozen=True)
class DayHours(Result):
    day: str  # "mon"…"sun"
    open: str | None  # "08:00"; None when closed
    close: str | None
    closed: bool


@dataclass(frozen=True)
class OrgInfo(Result):
    name: str
    phone: str
    email: str
    address: str
    timezone: str
    hours: tuple[DayHours, ...]  # Monday first
    open_now: bool
    today: datetime.date
    weekday: str


def _hours(business_hours: dict[str, Any]) -> tuple[DayHours, ...]:
    """One entry per weekday, Monday first; an empty or missing range means closed."""
    days: list[DayHours] = []
    for day in WEEKDAYS:
        span = business_hours.get(day) or []
        if len(span) == 2:
            days.append(DayHours(day=day, open=span[0], close=span[1], closed=False))
        else:
            days.append(DayHours(day=day, open=None, close=None, closed=True))
    return tuple(days)


def _open_now(hours: tuple[DayHours, ...], moment: datetime.datetime) -> bool:
    today = hours[moment.weekday()]
    if today.closed or today.open is None or today.close is None:
        return False
    clock = moment.strftime("%H:%M")
    return today.open <= clock < today.close


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
    return done(
        org.name,
        OrgInfo(
            name=org.name, phone=org.phone, email=org.email, address=org.address,
            timezone=org.timezone, hours=hours, open_now=_open_now(hours, ctx.local_now),
            today=ctx.today, weekday=WEEKDAYS[ctx.today.weekday()],
        ),
    )  # fmt: skip
