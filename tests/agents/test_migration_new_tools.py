"""Existing organisations' agents get the lookup tools the new handlers call (migration 0011)."""

from __future__ import annotations

from importlib import import_module

import pytest
from django.apps import apps

from agents.models import Agent, AgentIntent
from agents.services import agents_install_defaults
from tests.conftest import Cast

pytestmark = pytest.mark.django_db

migration = import_module("agents.migrations.0011_copies_get_the_new_lookup_tools")
photo_and_hand_over = import_module("agents.migrations.0031_photo_tools_and_hand_over_examples")


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


def test_copies_get_the_photo_tools_and_the_hand_over_phrasings_once(cast: Cast) -> None:
    agents_install_defaults(organisation=cast.org)
    customer = Agent.objects.get(organisation=cast.org, name="customer")
    customer.tools = [t for t in customer.tools if t != "equipment_record"]  # as before 0031
    customer.save(update_fields=["tools"])
    escalate = AgentIntent.objects.get(agent__organisation=cast.org, name="escalate")
    escalate.examples_es = "quiero hablar con un humano"
    escalate.save(update_fields=["examples_es"])

    photo_and_hand_over.forwards(apps, None)
    photo_and_hand_over.forwards(apps, None)  # twice: nothing doubled

    customer.refresh_from_db()
    escalate.refresh_from_db()
    assert customer.tools.count("equipment_record") == 1
    assert "job_note_add" in Agent.objects.get(organisation=cast.org, name="scheduling").tools
    lines = escalate.examples_es.splitlines()
    assert lines[0] == "quiero hablar con un humano"
    assert lines.count("¿hay alguien ahí que me pueda atender?") == 1

    photo_and_hand_over.backwards(apps, None)
    customer.refresh_from_db()
    escalate.refresh_from_db()
    assert "equipment_record" not in customer.tools
    assert escalate.examples_es == "quiero hablar con un humano"
