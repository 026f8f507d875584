"""The agents and A/B tests a turn reads, kept per organisation between turns (agents/cache.py):
no statement while kept, each turn its own copies, dropped at once when this process changes
them (a save, an intent, a stopped test written with `update`), one organisation's never
another's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agents import abtest, cache
from agents.models import Agent, AgentIntent
from agents.services import agent_save, agents_install_defaults
from tests.conftest import Cast

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def kept(settings: Any, cast: Cast) -> Iterator[None]:
    settings.AGENTS_CACHE_SECONDS = 60
    agents_install_defaults(organisation=cast.org)
    agents_install_defaults(organisation=cast.other_org)
    cache.forget()
    yield
    cache.forget()


def test_kept_between_turns_with_no_statement_and_each_turn_gets_its_own_copies(
    cast: Cast, django_assert_num_queries: Any
) -> None:
    first, running = cache.turn_agents(cast.org)
    assert set(first) == {a.name for a in Agent.objects.filter(organisation=cast.org)}
    assert running == []
    first["customer"].min_confidence = 0.99  # what a turn sets stays with that turn

    with django_assert_num_queries(0):
        second, _ = cache.turn_agents(cast.org)
        intents = [i.name for i in second["customer"].intents.all()]
    assert second["customer"] is not first["customer"]
    assert second["customer"].min_confidence != 0.99
    assert "search_customer" in intents


def test_a_saved_agent_or_intent_is_read_again_at_once(cast: Cast) -> None:
    cache.turn_agents(cast.org)
    customer = Agent.objects.get(organisation=cast.org, name="customer")
    agent_save(agent=customer, changes={"enabled": False})
    assert "customer" not in cache.turn_agents(cast.org)[0]

    fleet = Agent.objects.get(organisation=cast.org, name="fleet")
    intent = fleet.intents.first()
    assert intent is not None
    intent.description = "otra descripción"
    intent.save()
    kept_intent = cache.turn_agents(cast.org)[0]["fleet"].intents.get(pk=intent.pk)
    assert kept_intent.description == "otra descripción"
    assert AgentIntent.objects.filter(pk=intent.pk, description="otra descripción").exists()


def test_a_test_stopped_with_an_update_is_dropped_at_once(cast: Cast) -> None:
    agent = Agent.objects.get(organisation=cast.org, name="customer")
    agent_save(agent=agent, changes={"min_confidence": 0.9})
    a, b = list(agent.versions.order_by("number").values_list("number", flat=True))[:2]
    test = abtest.abtest_start(
        organisation=cast.org, agent=agent, version_a=a, version_b=b, share_b=50
    )
    assert [t.pk for t in cache.turn_agents(cast.org)[1]] == [test.pk]

    abtest.abtest_stop(test=test)
    assert cache.turn_agents(cast.org)[1] == []


def test_one_organisations_agents_are_never_anothers(cast: Cast) -> None:
    mine, _ = cache.turn_agents(cast.org)
    theirs, _ = cache.turn_agents(cast.other_org)
    assert {a.organisation_id for a in mine.values()} == {cast.org.pk}
    assert {a.organisation_id for a in theirs.values()} == {cast.other_org.pk}
    Agent.objects.filter(organisation=cast.other_org, name="fleet").delete()
    assert "fleet" in cache.turn_agents(cast.org)[0]
    assert "fleet" not in cache.turn_agents(cast.other_org)[0]


def test_with_no_keeping_every_turn_reads_afresh(
    cast: Cast, settings: Any, django_assert_num_queries: Any
) -> None:
    settings.AGENTS_CACHE_SECONDS = 0
    cache.turn_agents(cast.org)
    with django_assert_num_queries(3):  # the agents, their intents, the running tests
        cache.turn_agents(cast.org)
