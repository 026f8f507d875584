from __future__ import annotations

from typing import Any

import pytest

from agents.models import Agent, AgentVersion
from agents.registry import all_tools
from agents.services import agent_save, agents_install_defaults
from tests.conftest import Cast


@pytest.fixture(autouse=True)
def fast_passwords(settings: Any) -> None:
    # The default hasher spends ~0.7 s per user, and every test creates five.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def tool_names() -> list[str]:
    names = [tool.name for tool in all_tools()]
    assert len(names) >= 2, "the tests need at least two registered tools"
    return names


@pytest.fixture
def installed(cast: Cast) -> list[Agent]:
    return agents_install_defaults(organisation=cast.org)


@pytest.fixture
def agent(installed: list[Agent], tool_names: list[str]) -> Agent:
    """The organisation's scheduling agent, with tools the registry knows (whatever the defaults
    file says today), so edits in a test fail only for the reason the test is about."""
    chosen = next(a for a in installed if a.name == "scheduling")
    Agent.objects.filter(pk=chosen.pk).update(tools=tool_names[:1], requires_approval_for=[])
    # Start the history over so version 1 is this state.
    AgentVersion.objects.filter(agent=chosen).delete()
    return agent_save(agent=chosen, changes={}, actor=None)
