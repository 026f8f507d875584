"""The reference clock of the date-sensitive suites: Thursday 26 November 2026, 09:00 in Buenos
Aires, whatever day and hour the suite runs.

The product reads "now" in one place, `django.utils.timezone.now` (a turn's `TurnContext.now`,
`timezone.localdate()`, the selectors' `org_today`, the demo loader); the clock replaces that
function. It keeps ticking from the reference moment at the real pace, so leases, deadlines and
"the last few seconds" behave as they do in production. Rows whose model field has
`default=timezone.now` keep the real time (the field holds the function itself); nothing these
suites check reads them against the clock.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator
from contextlib import contextmanager
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone

BUENOS_AIRES = ZoneInfo("America/Argentina/Buenos_Aires")
REFERENCE = datetime.datetime(2026, 11, 26, 9, 0, tzinfo=BUENOS_AIRES)


@contextmanager
def reference_clock(moment: datetime.datetime = REFERENCE) -> Iterator[datetime.datetime]:
    """`timezone.now()` reads `moment` plus the real time elapsed since entering."""
    started = time.monotonic()

    def now() -> datetime.datetime:
        elapsed = datetime.timedelta(seconds=time.monotonic() - started)
        return (moment + elapsed).astimezone(datetime.UTC)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(timezone, "now", now)
        yield moment


@pytest.fixture
def clock() -> Iterator[datetime.datetime]:
    """The reference clock for one test."""
    with reference_clock() as moment:
        yield moment
