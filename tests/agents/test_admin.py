from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents.models import Agent, AgentVersion
from agents.registry import all_tools
from agents.services import agent_save, agent_snapshot
from tests.agents.conftest import tool_table
from tests.conftest import Cast


class _FormReader(HTMLParser):
    """Collects what a browser would submit from the page's main form."""

    def __init__(self) -> None:
        super().__init__()
        self.data: list[tuple[str, str]] = []
        self._textarea: str | None = None
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        name = a.get("name", "")
        if tag == "input" and name and a.get("type") not in ("submit", "button"):
            if a.get("type") in ("checkbox", "radio") and "checked" not in a:
                return
            checkable = a.get("type") in ("checkbox", "radio")
            self.data.append((name, a.get("value", "on" if checkable else "")))
        elif tag == "textarea" and name:
            self._textarea = name
            self.data.append((name, ""))
        elif tag == "select" and name:
            self._select = name
        elif tag == "option" and self._select and "selected" in a:
            self.data.append((self._select, a.get("value", "")))

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            name, value = self.data[-1]
            self.data[-1] = (name, value + data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "textarea":
            self._textarea = None
        elif tag == "select":
            self._select = None


def _form_data(html: str) -> dict[str, Any]:
    reader = _FormReader()
    reader.feed(html)
    data: dict[str, Any] = {}
    for name, value in reader.data:
        if name in data:
            data[name] = (
                [*data[name], value] if isinstance(data[name], list) else [data[name], value]
            )
        else:
            data[name] = value
    # A textarea's first newline is eaten by browsers; the admin renders one after the tag.
    return {k: (v[1:] if isinstance(v, str) and v.startswith("\n") else v) for k, v in data.items()}


def _change_url(agent: Agent) -> str:
    return reverse("admin:agents_agent_change", args=[agent.pk])


def test_changelist_works_for_a_superuser(client: Client, superuser: Any, agent: Agent) -> None:
    client.force_login(superuser)

    response = client.get(reverse("admin:agents_agent_changelist"))

    assert response.status_code == 200
    shown = set(response.context["cl"].result_list)
    assert agent in shown
    assert Agent.objects.filter(organisation__isnull=True).first() in shown


def test_change_page_and_tools_page_render(client: Client, superuser: Any, agent: Agent) -> None:
    client.force_login(superuser)

    assert client.get(_change_url(agent)).status_code == 200
    assert client.get(reverse("admin:agents_agent_tools")).status_code == 200
    assert client.get(reverse("admin:agents_agentversion_changelist")).status_code == 200


def test_admin_tools_page_matches_the_panels_language(
    client: Client, superuser: Any, agent: Agent
) -> None:
    client.force_login(superuser)
    url = reverse("admin:agents_agent_tools")

    spanish = tool_table(client.get(url, HTTP_ACCEPT_LANGUAGE="es-ar").content.decode())
    english = tool_table(client.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode())

    tools = all_tools()
    assert english == {tool.name: (tool.category.value, tool.description) for tool in tools}
    assert set(spanish) == set(english)
    assert all(spanish[name][1] != english[name][1] for name in english)
    assert spanish["job_cancel"][0] == "ejecución"


def test_org_admin_staff_see_only_their_organisations_agents(
    client: Client, cast: Cast, staff_admin: Any, agent: Agent
) -> None:
    from agents.services import agents_install_defaults

    foreign = agents_install_defaults(organisation=cast.other_org)[0]
    client.force_login(staff_admin)

    response = client.get(reverse("admin:agents_agent_changelist"))

    assert response.status_code == 200
    shown = list(response.context["cl"].result_list)
    assert len(shown) == 7 and {a.organisation_id for a in shown} == {cast.org.pk}
    assert client.get(_change_url(foreign)).status_code == 302  # "does not exist" redirect
    assert client.get(_change_url(agent)).status_code == 200


def test_staff_without_admin_role_cannot_use_the_agent_admin(
    client: Client, cast: Cast, agent: Agent
) -> None:
    cast.operator.is_staff = True
    cast.operator.save()
    client.force_login(cast.operator)

    assert client.get(reverse("admin:agents_agent_changelist")).status_code == 403
    assert client.get(_change_url(agent)).status_code in (302, 403)


def test_saving_in_the_admin_records_a_version_with_the_saved_intents(
    client: Client, staff_admin: Any, agent: Agent
) -> None:
    client.force_login(staff_admin)
    data = _form_data(client.get(_change_url(agent)).content.decode())
    data["prompt"] = "Prompt desde el admin"
    data["intents-0-examples_es"] += "\nagendá una visita para el jueves"
    data["intents-1-DELETE"] = "on"
    removed = agent.intents.all()[1].name

    response = client.post(_change_url(agent), data)

    assert response.status_code == 302, response.context["errors"] if response.context else ""
    agent.refresh_from_db()
    version = agent.versions.first()
    assert version is not None and version.number == 2 and version.created_by == staff_admin
    assert version.snapshot == agent_snapshot(agent)
    assert agent.prompt == "Prompt desde el admin"
    assert "agendá una visita para el jueves" in version.snapshot["intents"][0]["examples_es"]
    assert removed not in {i["name"] for i in version.snapshot["intents"]}


@pytest.mark.parametrize("language", ["es-ar", "en"])
def test_a_threshold_edit_lists_only_the_threshold_as_changed(
    client: Client, staff_admin: Any, agent: Agent, tool_names: list[str], language: str
) -> None:
    # Stored as seeded: a prompt of several lines, tools in an order the checkboxes do not keep.
    Agent.objects.filter(pk=agent.pk).update(
        prompt="Sos el agente de agenda.\nRespondé corto. ", tools=tool_names[1::-1]
    )
    AgentVersion.objects.filter(agent=agent).delete()
    agent_save(agent=Agent.objects.get(pk=agent.pk), changes={})
    client.force_login(staff_admin)
    data = _form_data(client.get(_change_url(agent)).content.decode())
    data["prompt"] = data["prompt"].replace("\n", "\r\n")  # what a browser's textarea sends
    data["min_confidence"] = "0.6"

    assert client.post(_change_url(agent), data).status_code == 302
    page = client.get(_change_url(agent), HTTP_ACCEPT_LANGUAGE=language).content.decode()
    diff = client.get(
        reverse("admin:agents_agent_version_diff", args=[agent.pk, 2]),
        HTTP_ACCEPT_LANGUAGE=language,
    )

    assert diff.context["diff"].changed_fields == ["min_confidence"]
    assert [line.text for line in diff.context["diff"].lines if line.kind != "context"][1:] == [
        "min_confidence: 0.35", "min_confidence: 0.6"
    ]  # fmt: skip
    assert "min_confidence ·" in page and "prompt, " not in page and "tools ·" not in page
    agent.refresh_from_db()
    assert agent.tools == tool_names[1::-1] and agent.prompt.endswith("corto. ")


def test_the_admin_shows_validation_errors_and_saves_nothing(
    client: Client, staff_admin: Any, agent: Agent, tool_names: list[str]
) -> None:
    client.force_login(staff_admin)
    data = _form_data(client.get(_change_url(agent)).content.decode())
    data["min_confidence"] = "3"
    data["tools"] = tool_names[:1]
    data["requires_approval_for"] = tool_names[1:2]

    response = client.post(_change_url(agent), data)

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert {"min_confidence", "requires_approval_for"} <= set(errors)
    assert agent.versions.count() == 1


def test_rolling_back_from_the_admin(client: Client, staff_admin: Any, agent: Agent) -> None:
    original = agent_snapshot(agent)
    agent_save(agent=agent, changes={"prompt": "cambiado"}, intents=[], actor=staff_admin)
    client.force_login(staff_admin)
    url = reverse("admin:agents_agent_rollback", args=[agent.pk, 1])

    assert client.get(url).status_code == 200  # the confirmation page
    assert agent_snapshot(agent)["intents"] == []
    response = client.post(url)

    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent_snapshot(agent) == original
    assert agent.versions.first().number == 3


def test_the_version_admin_action_rolls_back(client: Client, superuser: Any, agent: Agent) -> None:
    original = agent_snapshot(agent)
    agent_save(agent=agent, changes={"max_plan_steps": 7}, actor=superuser)
    client.force_login(superuser)
    first = AgentVersion.objects.get(agent=agent, number=1)

    response = client.post(
        reverse("admin:agents_agentversion_changelist"),
        {"action": "rollback_to_version", "_selected_action": [first.pk]},
    )

    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent_snapshot(agent) == original


def test_outsiders_cannot_roll_back_another_organisations_agent(
    client: Client, cast: Cast, agent: Agent
) -> None:
    cast.outsider.is_staff = True
    cast.outsider.save()
    agent_save(agent=agent, changes={"prompt": "cambiado"}, actor=None)
    client.force_login(cast.outsider)

    response = client.post(reverse("admin:agents_agent_rollback", args=[agent.pk, 1]))

    assert response.status_code in (403, 404)
    agent.refresh_from_db()
    assert agent.prompt == "cambiado"


def test_a_superuser_adds_an_agent_with_intents_as_version_one(
    client: Client, cast: Cast, superuser: Any, tool_names: list[str]
) -> None:
    client.force_login(superuser)
    url = reverse("admin:agents_agent_add")
    data = _form_data(client.get(url).content.decode())
    data.update(
        {
            "organisation": str(cast.org.pk),
            "name": "warranty",
            "label_es": "Garantías",
            "label_en": "Warranty",
            "category": "warranty",
            "description": "Reclamos de garantía",
            "min_confidence": "0.4",
            "max_plan_steps": "3",
            "tools": tool_names[:1],
            "intents-TOTAL_FORMS": "1",
            "intents-0-name": "warranty_claim",
            "intents-0-examples_es": "la garantía del split\nse rompió de nuevo",
            "intents-0-examples_en": "warranty claim",
        }
    )

    response = client.post(url, data)

    assert response.status_code == 302
    agent = Agent.objects.get(organisation=cast.org, name="warranty")
    version = agent.versions.get()
    assert version.number == 1 and version.snapshot == agent_snapshot(agent)
    assert [i["name"] for i in version.snapshot["intents"]] == ["warranty_claim"]
    assert agent.intents.get().examples_es == "la garantía del split\nse rompió de nuevo"


def test_org_admins_cannot_add_or_delete_agents(
    client: Client, staff_admin: Any, agent: Agent
) -> None:
    client.force_login(staff_admin)

    assert client.get(reverse("admin:agents_agent_add")).status_code == 403
    assert client.post(reverse("admin:agents_agent_delete", args=[agent.pk])).status_code == 403
    assert Agent.objects.filter(pk=agent.pk).exists()


def test_toggling_enabled_in_the_changelist_records_a_version(
    client: Client, superuser: Any, agent: Agent
) -> None:
    client.force_login(superuser)
    url = reverse("admin:agents_agent_changelist") + f"?organisation={agent.organisation_id}"
    data = _form_data(client.get(url).content.decode())
    index = next(k for k, v in data.items() if k.endswith("-id") and v == str(agent.pk))
    data.pop(index.replace("-id", "-enabled"), None)  # untick it
    data.pop("action", None)
    data["_save"] = "Save"

    response = client.post(url, data)

    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent.enabled is False
    assert agent.versions.first().snapshot["enabled"] is False
