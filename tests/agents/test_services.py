from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from agents.models import Agent, AgentIntent, AgentVersion
from agents.services import agent_rollback, agent_save, agent_snapshot, agents_install_defaults
from tests.conftest import Cast


def _intents(agent: Agent) -> list[dict[str, str]]:
    return agent_snapshot(agent)["intents"]


def test_install_defaults_gives_the_organisation_its_own_copies(cast: Cast) -> None:
    assert Agent.objects.filter(organisation=cast.org).count() == 0

    created = agents_install_defaults(organisation=cast.org)

    assert len(created) == 7
    for copy in created:
        template = Agent.objects.get(organisation__isnull=True, name=copy.name)
        assert copy.pk != template.pk
        assert _intents(copy) == _intents(template)
        assert copy.versions.get().number == 1
    assert AgentIntent.objects.filter(agent__organisation=cast.org).count() == 27
    assert Agent.objects.filter(organisation=cast.other_org).count() == 0


def test_install_defaults_is_idempotent_and_keeps_edits(cast: Cast, agent: Agent) -> None:
    agent_save(agent=agent, changes={"prompt": "Mi prompt"}, actor=cast.admin)
    before = Agent.objects.filter(organisation=cast.org).count()

    assert agents_install_defaults(organisation=cast.org) == []

    assert Agent.objects.filter(organisation=cast.org).count() == before == 7
    agent.refresh_from_db()
    assert agent.prompt == "Mi prompt"


def test_install_defaults_adds_only_the_missing_agents(cast: Cast, installed: list[Agent]) -> None:
    Agent.objects.filter(organisation=cast.org, name="fleet").delete()

    created = agents_install_defaults(organisation=cast.org)

    assert [a.name for a in created] == ["fleet"]


def test_each_save_records_a_numbered_version_with_the_intents(cast: Cast, agent: Agent) -> None:
    numbers_before = list(agent.versions.values_list("number", flat=True))
    intents = _intents(agent)
    intents[0]["examples_es"] += "\nagendame una visita el martes"

    agent_save(agent=agent, changes={"min_confidence": 0.5}, intents=intents, actor=cast.admin)
    agent_save(agent=agent, changes={"prompt": "Otro prompt"}, actor=cast.admin)

    assert numbers_before == [1]
    latest, middle = list(agent.versions.all()[:2])
    assert (middle.number, latest.number) == (2, 3)
    assert middle.snapshot["min_confidence"] == 0.5
    assert "agendame una visita el martes" in middle.snapshot["intents"][0]["examples_es"]
    assert latest.snapshot["prompt"] == "Otro prompt" and latest.created_by == cast.admin
    assert agent.prompt == "Otro prompt"  # the instance passed in is refreshed


def test_a_save_that_changes_nothing_records_no_version(cast: Cast, agent: Agent) -> None:
    agent_save(agent=agent, changes={"prompt": agent.prompt}, intents=_intents(agent), actor=None)

    assert agent.versions.count() == 1


def test_the_first_edit_of_an_unversioned_agent_keeps_the_old_state(
    cast: Cast, agent: Agent
) -> None:
    old_prompt = agent.prompt
    AgentVersion.objects.filter(agent=agent).delete()

    agent_save(agent=agent, changes={"prompt": "Nuevo"}, actor=cast.admin)

    baseline, edit = agent.versions.order_by("number")
    assert (baseline.number, edit.number) == (1, 2)
    assert baseline.snapshot["prompt"] == old_prompt and edit.snapshot["prompt"] == "Nuevo"


def test_rollback_restores_fields_and_intents_exactly(cast: Cast, agent: Agent) -> None:
    original = agent_snapshot(agent)
    intents = _intents(agent)
    intents[0]["examples_en"] = "only this one"
    del intents[1]
    intents.append({"name": "brand_new", "description": "x", "examples_es": "a\nb"})
    agent_save(
        agent=agent,
        changes={"prompt": "cambiado", "max_plan_steps": 9, "enabled": False},
        intents=intents,
        actor=cast.admin,
    )
    assert agent_snapshot(agent) != original

    version = agent_rollback(agent=agent, version_number=1, actor=cast.manager)

    assert agent_snapshot(agent) == original
    assert version.number == 3 and "v1" in version.note
    assert version.snapshot == original and version.created_by == cast.manager
    assert agent.enabled is True and agent.max_plan_steps == original["max_plan_steps"]


def test_rollback_to_a_missing_version_is_rejected(agent: Agent) -> None:
    with pytest.raises(ValidationError):
        agent_rollback(agent=agent, version_number=99, actor=None)
    assert agent.versions.count() == 1


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"tools": ["no_such_tool"]}, "tools"),
        ({"min_confidence": 1.5}, "min_confidence"),
        ({"min_confidence": -0.1}, "min_confidence"),
        ({"max_plan_steps": 0}, "max_plan_steps"),
        ({"max_plan_steps": 11}, "max_plan_steps"),
    ],
)
def test_invalid_settings_are_rejected_and_nothing_is_saved(
    agent: Agent, changes: dict[str, object], field: str
) -> None:
    before = agent_snapshot(agent)

    with pytest.raises(ValidationError) as caught:
        agent_save(agent=agent, changes=changes, actor=None)

    assert field in caught.value.message_dict
    agent.refresh_from_db()
    assert agent_snapshot(agent) == before and agent.versions.count() == 1


def test_approval_rules_must_name_enabled_tools(agent: Agent, tool_names: list[str]) -> None:
    changes = {"tools": tool_names[:1], "requires_approval_for": tool_names[1:2]}
    with pytest.raises(ValidationError) as caught:
        agent_save(agent=agent, changes=changes, actor=None)
    assert "requires_approval_for" in caught.value.message_dict

    changes["requires_approval_for"] = tool_names[:1]
    agent_save(agent=agent, changes=changes, actor=None)
    assert agent.requires_approval_for == tool_names[:1]


@pytest.mark.parametrize(
    "intents",
    [
        [{"name": "dup"}, {"name": "dup"}],
        [{"name": "con espacios"}],
        [{"name": ""}],
    ],
)
def test_bad_intents_are_rejected(agent: Agent, intents: list[dict[str, str]]) -> None:
    before = _intents(agent)
    with pytest.raises(ValidationError):
        agent_save(agent=agent, changes={}, intents=intents, actor=None)
    assert _intents(agent) == before


def test_name_and_organisation_are_not_editable(cast: Cast, agent: Agent) -> None:
    for changes in ({"name": "otro"}, {"organisation": cast.other_org}):
        with pytest.raises(ValidationError):
            agent_save(agent=agent, changes=changes, actor=None)
    agent.refresh_from_db()
    assert (agent.name, agent.organisation_id) == ("scheduling", cast.org.pk)


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"subject": "vehicle"}, "subject"),
        ({"date_is": "yesterday"}, "date_is"),
        ({"corrected_by": "Not a slug"}, "corrected_by"),
        ({"picked_as": "book job"}, "picked_as"),
        ({"existing_as": "pay/status"}, "existing_as"),
        ({"many_as": "bulk reschedule"}, "many_as"),
    ],
)
def test_an_intent_with_a_bad_registry_fact_is_rejected_and_nothing_is_saved(
    agent: Agent, spec: dict[str, str], field: str
) -> None:
    before = agent_snapshot(agent)
    intents = [*_intents(agent), {"name": "order_parts", "examples_es": "pedí repuestos", **spec}]

    with pytest.raises(ValidationError) as caught:
        agent_save(agent=agent, changes={}, intents=intents, actor=None)

    assert field in " ".join(caught.value.message_dict["intents"])
    agent.refresh_from_db()
    assert agent_snapshot(agent) == before


def test_an_intent_saves_its_registry_facts(agent: Agent) -> None:
    facts = {"subject": "job", "date_is": "own", "corrected_by": "reschedule",
             "picked_as": "book_job", "existing_as": "payment_status"}  # fmt: skip
    intents = [*_intents(agent), {"name": "order_parts", "examples_es": "pedí repuestos", **facts}]

    agent_save(agent=agent, changes={}, intents=intents, actor=None)

    row = agent.intents.get(name="order_parts")
    assert {key: getattr(row, key) for key in facts} == facts
