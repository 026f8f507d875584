"""Helpers for the business tests: a fixed working week in the organisation's timezone."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone, translation

BA = ZoneInfo("America/Argentina/Buenos_Aires")


def next_monday(weeks_ahead: int = 1) -> datetime.date:
    """A Monday safely in the future, so "not in the past" checks never depend on the clock."""
    today = timezone.localdate(timezone=BA)
    return today + datetime.timedelta(days=(7 - today.weekday()) % 7 or 7, weeks=weeks_ahead)


def at(day: datetime.date, hour: int, minute: int = 0) -> datetime.datetime:
    return datetime.datetime.combine(day, datetime.time(hour, minute), tzinfo=BA)


@pytest.fixture
def monday() -> datetime.date:
    return next_monday()


@pytest.fixture
def english() -> Iterator[None]:
    """Messages in English, whatever the default language (assertions read the msgids)."""
    with translation.override("en"):
        yield
