from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agents.models import Agent
from testing.fake_graph import FakeGraph
from tests.conftest import Cast

# The chat's fixtures hold here too: routers rebuilt per test
# (autouse), the registry of default agents and the scripted handlers.
from tests.copilot.conftest import (  # noqa: F401
    fresh_routers,
    handlers,
    registry,
    router,
)
from whatsapp import humans
from whatsapp.models import WhatsAppAccount

# Two organisations' numbers and a fake Graph API (tests/whatsapp/test_whatsapp.py and
# test_events.py; test_customers.py keeps a graph of its own).
NUMBER, SECRET, TOKEN = "1100220033", "app-secret-clima", "verify-clima"
OTHER_NUMBER, OTHER_SECRET = "9900880077", "app-secret-frio"
CUSTOMER = "5491155550000"


@pytest.fixture
def graph(settings: Any) -> Iterator[FakeGraph]:
    with FakeGraph() as fake:
        settings.WHATSAPP_GRAPH_URL = fake.base_url
        settings.WHATSAPP_MEDIA_HOSTS = [fake.base_url]  # the fake serves the files itself
        settings.WHATSAPP_RETRY_BASE_SECONDS = 2.0
        settings.WHATSAPP_MAX_ATTEMPTS = 4
        yield fake


def _account(org: Any, number: str, secret: str, token: str, **extra: Any) -> WhatsAppAccount:
    account = WhatsAppAccount(organisation=org, **extra)
    account.phone_number_id = number
    account.app_secret = secret
    account.verify_token = token
    account.access_token = f"token-{number}"
    account.save()
    return account


@pytest.fixture
def account(cast: Cast) -> WhatsAppAccount:
    """The organisation's one number (tests/whatsapp/test_customers.py, test_own_jobs.py)."""
    account = _account(cast.org, NUMBER, SECRET, "verify")
    account.access_token = "token-clima"  # what those tests see in the Graph API's headers
    account.save()
    return account


@pytest.fixture
def accounts(cast: Cast) -> tuple[WhatsAppAccount, WhatsAppAccount]:
    return (
        _account(cast.org, NUMBER, SECRET, TOKEN),
        _account(cast.other_org, OTHER_NUMBER, OTHER_SECRET, "verify-frio"),
    )


@pytest.fixture
def told(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """What the organisation's panels hear (group `whatsapp.o<org>`), in order."""
    sent: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(humans, "send_to_group", lambda group, m: sent.append((group, m)) or True)
    return sent


@pytest.fixture
def photo_tools(registry: dict[str, Agent]) -> dict[str, Agent]:  # noqa: F811 - the fixture
    """The registry with the tools a photo's records are written with, enabled as the shipped
    defaults enable them (whatsapp/photo_records.py)."""
    for name, tool in (("customer", "equipment_record"), ("scheduling", "job_note_add")):
        agent = registry[name]
        agent.tools = [*agent.tools, tool]
        agent.save(update_fields=["tools"])
    return registry
