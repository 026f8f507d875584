from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from agents.defaults import load_default_agents
from agents.models import Agent, AgentIntent
from agents.registry import all_tools
from agents.services import agents_install_defaults, agents_sync_defaults
from tests.conftest import Cast

SHIPPED = {
    "scheduling": {"book_job", "reschedule", "cancel_job", "check_availability"},
    "customer": {"create_customer", "search_customer", "update_customer", "validate_cuit"},
    "financial": {"generate_quote", "generate_invoice", "payment_status"},
    "fleet": {"assign_vehicle", "technician_sick", "bulk_reschedule", "dispatch"},
    "escalation": {"complaint", "emergency", "frustration_detected", "escalate"},
    "proactive": {"maintenance_due", "follow_up", "seasonal_reminder"},
    "general": {"greeting", "farewell", "hours", "pricing_info", "unknown"},
}


def _templates() -> list[Agent]:
    return list(Agent.objects.filter(organisation__isnull=True).prefetch_related("intents"))


def test_the_migration_created_the_seven_default_agents_with_their_intents(db: None) -> None:
    templates = _templates()
    assert {agent.name: {i.name for i in agent.intents.all()} for agent in templates} == SHIPPED
    assert AgentIntent.objects.filter(agent__organisation__isnull=True).count() == 27


def test_every_default_intent_has_at_least_twenty_examples_in_both_languages(db: None) -> None:
    for intent in AgentIntent.objects.filter(agent__organisation__isnull=True):
        pairs = intent.examples()
        assert len(pairs) >= 20, intent
        assert {lang for _text, lang in pairs} == {"es", "en"}, intent


def test_default_agents_only_enable_registered_tools(db: None) -> None:
    known = {tool.name for tool in all_tools()}
    for agent in _templates():
        assert set(agent.tools) <= known, (agent.name, set(agent.tools) - known)
        assert set(agent.requires_approval_for) <= set(agent.tools), agent.name


def test_sync_changes_nothing_when_the_file_matches(db: None) -> None:
    report = agents_sync_defaults()
    assert report.created == report.updated == report.deleted == []
    assert len(report.unchanged) == 7


def _edited_file(tmp_path: Path) -> Path:
    agents = load_default_agents()
    agents[0]["prompt"] = "Nuevo prompt"
    agents[0]["intents"][0]["examples_es"] += "\nun ejemplo nuevo"
    agents[0]["intents"] = agents[0]["intents"][:-1]  # one intent dropped
    del agents[-1]  # one agent dropped
    path = tmp_path / "defaults.json"
    path.write_text(json.dumps(agents), encoding="utf-8")
    return path


def test_sync_updates_templates_and_leaves_organisation_copies_alone(
    cast: Cast, tmp_path: Path
) -> None:
    agents_install_defaults(organisation=cast.org)
    first, last = load_default_agents()[0], load_default_agents()[-1]
    copy_before = Agent.objects.get(organisation=cast.org, name=first["name"])
    intents_before = copy_before.intents.count()

    report = agents_sync_defaults(path=_edited_file(tmp_path))

    assert report.updated == [first["name"]] and report.deleted == [last["name"]]
    template = Agent.objects.get(organisation__isnull=True, name=first["name"])
    assert template.prompt == "Nuevo prompt"
    assert template.intents.count() == len(first["intents"]) - 1
    assert "un ejemplo nuevo" in template.intents.first().examples_es
    assert not Agent.objects.filter(organisation__isnull=True, name=last["name"]).exists()
    copy = Agent.objects.get(organisation=cast.org, name=first["name"])
    assert copy.prompt == copy_before.prompt and copy.intents.count() == intents_before
    assert Agent.objects.filter(organisation=cast.org, name=last["name"]).exists()


def test_sync_command_reports_and_can_install_missing_agents(cast: Cast) -> None:
    out = StringIO()
    call_command("sync_default_agents", "--install-missing", stdout=out)
    assert "unchanged (7 agents)" in out.getvalue()
    assert Agent.objects.filter(organisation=cast.org).count() == 7
    assert Agent.objects.filter(organisation=cast.other_org).count() == 7


def test_sync_command_fails_clearly_on_a_broken_file(db: None, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    with pytest.raises(CommandError, match="cannot read"):
        call_command("sync_default_agents", "--file", str(broken), stdout=StringIO())
    assert Agent.objects.filter(organisation__isnull=True).count() == 7
