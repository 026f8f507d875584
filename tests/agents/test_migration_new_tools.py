"""Existing organisations' agents get the lookup tools the new handlers call (migration 0011)."""

from __future__ import annotations

from importlib import import_module

import pytest
from django.apps import apps

from agents.models import Agent
from agents.services import agents_install_defaults
from tests.conftest import Cast

pytestmark = pytest.mark.django_db

migration = import_module("agents.migrations.0011_copies_get_the_new_lookup_tools")


def test_copies_made_before_the_tools_existed_get_them_and_keep_their_own(cast: Cast) -> None:
    agents_install_defaults(organisation=cast.org)
    financial = Agent.objects.get(organisation=cast.org, name="financial")
    # As an organisation's copy looked before: without quote_find, with one tool of its own
    # choice removed (price_list) — which must stay removed.
    financial.tools = [t for t in financial.tools if t not in ("quote_find", "price_list")]
    financial.save(update_fields=["tools"])

    migration.add_tools(apps, None)
    migration.add_tools(apps, None)  # run twice: added once

    financial.refresh_from_db()
    assert financial.tools.count("quote_find") == 1
    assert "price_list" not in financial.tools
    for name, tools in migration.NEW_TOOLS.items():
        agent = Agent.objects.get(organisation=cast.org, name=name)
        assert set(tools) <= set(agent.tools)
