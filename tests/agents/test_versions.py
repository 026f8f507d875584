"""The agent page's versions (D1): a readable diff between versions, and a rollback that records a
new version instead of rewriting history."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents.models import Agent, AgentVersion
from agents.services import agent_rollback, agent_save, agents_install_defaults
from agents.version_diff import diff_snapshots, diff_versions, serialise
from tests.conftest import Cast


@pytest.fixture
def agent(cast: Cast) -> Agent:
    installed = agents_install_defaults(organisation=cast.org)
    return next(a for a in installed if a.name == "scheduling")


def _diff_url(agent: Agent, number: int, against: str = "") -> str:
    url = reverse("admin:agents_agent_version_diff", args=[agent.pk, number])
    return f"{url}?against={against}" if against else url


def _intents(agent: Agent) -> list[dict[str, Any]]:
    return [
        {k: getattr(i, k) for k in ("name", "description", "examples_es", "examples_en")}
        for i in agent.intents.order_by("pk")
    ]


def test_serialise_puts_each_example_on_its_own_line() -> None:
    lines = serialise(
        {
            "name": "x",
            "min_confidence": 0.4,
            "tools": ["a", "b"],
            "enabled": True,
            "intents": [{"name": "book", "description": "", "examples_es": "uno\ndos",
                         "examples_en": "one"}],
        }
    )  # fmt: skip
    assert lines == [
        "enabled: yes",
        "min_confidence: 0.4",
        "tools:",
        "  - a",
        "  - b",
        "intents:",
        "  [book]",
        "    es: uno",
        "    es: dos",
        "    en: one",
    ]


def test_diff_names_exactly_what_changed() -> None:
    old = {"min_confidence": 0.35, "tools": ["a"], "intents": [
        {"name": "book", "examples_es": "uno", "examples_en": ""}]}  # fmt: skip
    new = {"min_confidence": 0.5, "tools": ["a"], "intents": [
        {"name": "book", "examples_es": "uno\nagendame el jueves", "examples_en": ""}]}  # fmt: skip

    diff = diff_snapshots(old, new, old_label="v1", new_label="v2")

    added = [line.text for line in diff.lines if line.kind == "add"]
    removed = [line.text for line in diff.lines if line.kind == "remove"]
    assert added == ["min_confidence: 0.5", "    es: agendame el jueves"]
    assert removed == ["min_confidence: 0.35"]
    assert (diff.added, diff.removed) == (2, 1)
    assert diff.changed_fields == ["min_confidence", "intents"]
    assert not diff_snapshots(old, old, old_label="a", new_label="b").lines


def test_versions_saved_through_a_form_differ_only_where_a_value_did() -> None:
    # Versions recorded before the admin kept stored values: "\r\n" from a textarea, the tools
    # in the checkboxes' order. Only the threshold really changed.
    old = {"prompt": "Sé breve.\nUsá voseo.", "min_confidence": 0.35, "tools": ["b", "a"],
           "intents": [{"name": "book", "examples_es": "uno\ndos"}]}  # fmt: skip
    new = {"prompt": "Sé breve.\r\nUsá voseo.\r\n", "min_confidence": 0.5, "tools": ["a", "b"],
           "intents": [{"name": "book", "examples_es": "uno\r\ndos"}]}  # fmt: skip

    diff = diff_snapshots(old, new, old_label="v1", new_label="v2")

    assert diff.changed_fields == ["min_confidence"]
    assert [(line.kind, line.text) for line in diff.lines if line.kind in ("add", "remove")] == [
        ("remove", "min_confidence: 0.35"), ("add", "min_confidence: 0.5")
    ]  # fmt: skip


def test_diff_of_two_saved_versions(agent: Agent) -> None:
    agent_save(agent=agent, changes={"min_confidence": 0.61, "prompt": "Sé breve."})
    v1, v2 = AgentVersion.objects.filter(agent=agent).order_by("number")[:2]

    diff = diff_versions(v1, v2)

    assert "min_confidence: 0.61" in [line.text for line in diff.lines if line.kind == "add"]
    assert "prompt: Sé breve." in [line.text for line in diff.lines if line.kind == "add"]
    assert set(diff.changed_fields) == {"min_confidence", "prompt"}


def test_the_agent_page_lists_versions_with_links_to_their_diffs(
    client: Client, staff_admin: Any, agent: Agent
) -> None:
    agent_save(agent=agent, changes={"min_confidence": 0.61})
    client.force_login(staff_admin)

    page = client.get(reverse("admin:agents_agent_change", args=[agent.pk])).content.decode()

    assert _diff_url(agent, 2) in page
    assert "min_confidence ·" in page  # what v2 changed, named in the list
    assert reverse("admin:agents_agent_rollback", args=[agent.pk, 1]) in page


def test_diff_page_against_previous_and_against_current(
    client: Client, staff_admin: Any, agent: Agent
) -> None:
    agent_save(agent=agent, changes={"min_confidence": 0.61})
    agent_save(agent=agent, changes={"max_plan_steps": 7})
    client.force_login(staff_admin)

    previous = client.get(_diff_url(agent, 2))
    current = client.get(_diff_url(agent, 2, "current"))

    assert previous.status_code == 200 and current.status_code == 200
    assert previous.context["diff"].changed_fields == ["min_confidence"]
    assert current.context["diff"].changed_fields == ["max_plan_steps"]
    assert "min_confidence: 0.61" in previous.content.decode()
    # v2 is not the latest: the page offers the rollback.
    assert previous.context["can_roll_back"]


def test_rollback_from_the_diff_writes_a_new_version_and_keeps_history(
    client: Client, staff_admin: Any, agent: Agent
) -> None:
    original = _intents(agent)
    agent_save(
        agent=agent,
        changes={"min_confidence": 0.7},
        intents=original[:-1],
    )
    history_before = list(
        AgentVersion.objects.filter(agent=agent).order_by("number").values("number", "snapshot")
    )
    client.force_login(staff_admin)

    response = client.post(reverse("admin:agents_agent_rollback", args=[agent.pk, 1]))

    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent.min_confidence == history_before[0]["snapshot"]["min_confidence"] != 0.7
    assert _intents(agent) == original
    history_after = list(
        AgentVersion.objects.filter(agent=agent).order_by("number").values("number", "snapshot")
    )
    assert history_after[: len(history_before)] == history_before  # nothing rewritten
    assert history_after[-1]["number"] == len(history_before) + 1
    assert history_after[-1]["snapshot"] == history_before[0]["snapshot"]
    # The new latest equals v1: its diff with v1 is empty.
    newest = client.get(_diff_url(agent, history_after[-1]["number"], "current"))
    assert newest.context["diff"].identical


def test_unknown_version_is_a_404(client: Client, staff_admin: Any, agent: Agent) -> None:
    client.force_login(staff_admin)
    assert client.get(_diff_url(agent, 99)).status_code == 404


def test_outsider_with_staff_permissions_sees_no_diff(
    client: Client, cast: Cast, agent: Agent
) -> None:
    agent_save(agent=agent, changes={"min_confidence": 0.61})
    cast.outsider.is_staff = True
    cast.outsider.save()
    client.force_login(cast.outsider)

    response = client.get(_diff_url(agent, 2))

    assert response.status_code in (403, 404)
    assert b"0.61" not in response.content
    assert client.post(reverse("admin:agents_agent_rollback", args=[agent.pk, 1])).status_code in (
        403,
        404,
    )
    assert AgentVersion.objects.filter(agent=agent).count() == 2


def test_an_intent_s_facts_are_versioned_diffed_and_rolled_back(agent: Agent) -> None:
    intents = [
        {key: getattr(i, key) for key in ("name", "description", "examples_es", "examples_en")}
        | ({"requires": ["technician"], "phrase_es": "sacar un turno"} if i.name == "book_job"
           else {})
        for i in agent.intents.order_by("pk")
    ]  # fmt: skip
    before = agent.versions.order_by("-number").first()
    assert before is not None
    book = next(i for i in before.snapshot["intents"] if i["name"] == "book_job")
    assert (book["writes"], book["requires"], book["after"]) == (True, [], ["create_customer"])

    agent_save(agent=agent, changes={}, intents=intents)

    after = agent.versions.order_by("-number").first()
    assert after is not None and after.number == before.number + 1
    book = next(i for i in after.snapshot["intents"] if i["name"] == "book_job")
    assert (book["requires"], book["phrase_es"], book["writes"]) == (
        ["technician"], "sacar un turno", True,
    )  # fmt: skip
    added = [line.text for line in diff_versions(before, after).lines if line.kind == "add"]
    assert added == ["    requires: technician", "    phrase_es: sacar un turno"]

    agent_rollback(agent=agent, version_number=before.number)
    restored = agent.intents.get(name="book_job")
    assert (restored.requires, restored.phrase_es) == ([], "agendar el trabajo")
