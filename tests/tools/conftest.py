"""A tool context per organisation at a fixed moment: Monday 2026-11-23, 07:00 in Buenos Aires."""

from __future__ import annotations

import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from agents.registry import ToolContext, ToolResult, get_tool
from tests.conftest import Cast

BA = ZoneInfo("America/Argentina/Buenos_Aires")
NOW = datetime.datetime(2026, 11, 23, 7, 0, tzinfo=BA)
MONDAY = NOW.date()


def at(day: datetime.date, hour: int, minute: int = 0) -> datetime.datetime:
    return datetime.datetime.combine(day, datetime.time(hour, minute), tzinfo=BA)


def run(ctx: ToolContext, name: str, **arguments: Any) -> ToolResult:
    return get_tool(name).run(ctx, arguments)


@pytest.fixture
def ctx(cast: Cast) -> ToolContext:
    return ToolContext(organisation=cast.org, user=cast.operator, conversation_id=None, now=NOW)


@pytest.fixture
def outsider_ctx(cast: Cast) -> ToolContext:
    return ToolContext(
        organisation=cast.other_org, user=cast.outsider, conversation_id=None, now=NOW
    )
