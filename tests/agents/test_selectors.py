from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser

from agents.models import Agent, AgentIntent
from agents.selectors import (
    agents_for_org,
    examples_fingerprint,
    get_agent_for_user,
    training_examples,
)
from agents.services import agent_save, agents_install_defaults
from tests.conftest import Cast


def test_agents_for_org_lists_only_its_enabled_agents(cast: Cast, installed: list[Agent]) -> None:
    agents_install_defaults(organisation=cast.other_org)
    Agent.objects.filter(organisation=cast.org, name="fleet").update(enabled=False)

    enabled = {a.name for a in agents_for_org(cast.org)}
    everything = {a.name for a in agents_for_org(cast.org, enabled_only=False)}

    assert "fleet" not in enabled and len(enabled) == 6
    assert "fleet" in everything and len(everything) == 7
    assert all(a.organisation_id == cast.org.pk for a in agents_for_org(cast.org, False))


def test_training_examples_cover_every_enabled_intent(cast: Cast, installed: list[Agent]) -> None:
    examples = training_examples(cast.org)

    intents = {(intent, agent) for _text, intent, agent, _lang in examples}
    assert len(intents) == 27
    assert {lang for *_rest, lang in examples} == {"es", "en"}
    assert all(text and text == text.strip() for text, *_rest in examples)
    expected = sum(
        len(i.examples()) for i in AgentIntent.objects.filter(agent__organisation=cast.org)
    )
    assert len(examples) == expected


def test_training_examples_skip_disabled_agents_and_other_orgs(
    cast: Cast, installed: list[Agent]
) -> None:
    Agent.objects.filter(organisation=cast.org, name="general").update(enabled=False)

    agents = {agent for _t, _i, agent, _l in training_examples(cast.org)}

    assert "general" not in agents and len(agents) == 6
    assert training_examples(cast.other_org) == []


def test_fingerprint_is_stable_and_per_organisation(cast: Cast, installed: list[Agent]) -> None:
    agents_install_defaults(organisation=cast.other_org)
    assert examples_fingerprint(cast.org) == examples_fingerprint(cast.org)
    # Same content, different rows: two organisations never share a cached classifier.
    assert examples_fingerprint(cast.org) != examples_fingerprint(cast.other_org)


def test_fingerprint_changes_when_an_example_changes(cast: Cast, agent: Agent) -> None:
    before = examples_fingerprint(cast.org)
    intents = [
        {
            "name": i.name,
            "description": i.description,
            "examples_es": i.examples_es,
            "examples_en": i.examples_en,
        }
        for i in agent.intents.all()
    ]
    intents[0]["examples_es"] += "\nnecesito un técnico mañana"

    agent_save(agent=agent, changes={}, intents=intents, actor=None)

    assert examples_fingerprint(cast.org) != before


@pytest.mark.parametrize("change", ["enabled", "intent_name", "intent_deleted"])
def test_fingerprint_changes_with_what_training_depends_on(
    cast: Cast, agent: Agent, change: str
) -> None:
    before = examples_fingerprint(cast.org)
    intent = agent.intents.first()
    assert intent is not None
    if change == "enabled":
        agent_save(agent=agent, changes={"enabled": False}, actor=None)
    elif change == "intent_name":
        AgentIntent.objects.filter(pk=intent.pk).update(name="renamed")
    else:
        intent.delete()

    assert examples_fingerprint(cast.org) != before


def test_fingerprint_ignores_settings_that_do_not_train(cast: Cast, agent: Agent) -> None:
    before = examples_fingerprint(cast.org)

    agent_save(
        agent=agent,
        changes={"prompt": "otro prompt", "min_confidence": 0.8, "max_plan_steps": 2},
        actor=None,
    )
    agents_install_defaults(organisation=cast.other_org)

    assert examples_fingerprint(cast.org) == before


def test_fingerprint_is_one_query(
    cast: Cast, installed: list[Agent], django_assert_num_queries: object
) -> None:
    with django_assert_num_queries(1):  # type: ignore[operator]
        examples_fingerprint(cast.org)


def test_members_get_their_agents(cast: Cast, agent: Agent) -> None:
    for user in (cast.operator, cast.manager, cast.admin):
        assert get_agent_for_user(user, agent.pk) == agent


def test_outsiders_and_anonymous_users_cannot_get_an_agent(cast: Cast, agent: Agent) -> None:
    template = Agent.objects.filter(organisation__isnull=True).first()
    assert template is not None
    for user, pk in (
        (cast.outsider, agent.pk),
        (AnonymousUser(), agent.pk),
        (cast.admin, template.pk),
        (cast.admin, 10**9),
    ):
        with pytest.raises(Agent.DoesNotExist):
            get_agent_for_user(user, pk)
