"""Fixtures for the embedded engine: a fixed "now" in the organisation's timezone and one trained
router shared by the module (training imports scikit-learn, which takes a couple of seconds)."""

from __future__ import annotations

import datetime
import zoneinfo

import pytest

from nlu import Context, Router, Vocabulary, build_router
from tests.nlu.training_examples import examples, specs

TZ = "America/Argentina/Buenos_Aires"
# Wednesday 18 November 2026, 10:00 in Buenos Aires.
NOW = datetime.datetime(2026, 11, 18, 10, 0, tzinfo=zoneinfo.ZoneInfo(TZ))


def make_context(vocabulary: Vocabulary | None = None) -> Context:
    return Context(today=NOW.date(), now=NOW, tz=TZ, vocabulary=vocabulary or Vocabulary())


@pytest.fixture
def ctx() -> Context:
    return make_context()


@pytest.fixture(scope="session")
def router() -> Router:
    return build_router(examples(), specs=list(specs().values()))
