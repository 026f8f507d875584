"""A scripted OpenAI-compatible server per test and a Provider pointing at it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from llm import pricing
from llm.provider import Provider
from testing.scripted import ScriptedServer


@pytest.fixture
def server(scripted_server: ScriptedServer, settings: Any) -> ScriptedServer:
    """The scripted server (tests/conftest.py) as the environment's model (OPENAI_*), failing
    fast: 0.5 s, no retries. test_engine_e2e gives a loaded machine more headroom and one retry."""
    settings.OPENAI_API_KEY = "test-key"
    settings.OPENAI_BASE_URL = scripted_server.base_url
    settings.OPENAI_MODEL = "scripted-model"
    settings.OPENAI_TIMEOUT = 0.5
    settings.OPENAI_MAX_RETRIES = 0
    settings.OPENAI_RETRY_BUDGET = 0.2
    return scripted_server


@pytest.fixture
def provider(scripted_server: ScriptedServer) -> Provider:
    return Provider(
        base_url=scripted_server.base_url,
        api_key="sk-test",
        default_model="gpt-4o-mini",
        timeout_s=1.0,
        max_retries=2,
        retry_budget_s=5.0,
        source="environment",
    )


def tuned(provider: Provider, **changes: Any) -> Provider:
    return replace(provider, **changes)


@pytest.fixture(autouse=True)
def _fresh_prices() -> Iterator[None]:
    # Each test's database is rolled back; the per-process price cache must not outlive it.
    pricing.forget()
    yield
    pricing.forget()
