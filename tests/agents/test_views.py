from __future__ import annotations

from django.test import Client
from django.urls import reverse
from django.utils import translation

from agents.models import Agent
from agents.registry import all_tools
from tests.agents.conftest import tool_table
from tests.conftest import Cast

URL = "/agents/tools/"


def test_the_url_is_named() -> None:
    assert reverse("agents:tools") == URL


def test_tools_page_lists_every_tool_with_category_and_agents(
    client: Client, cast: Cast, agent: Agent, tool_names: list[str]
) -> None:
    client.force_login(cast.operator)

    response = client.get(URL)

    assert response.status_code == 200
    html = response.content.decode()
    for tool in all_tools():
        assert f'id="tool-{tool.name}"' in html
        assert f'data-category="{tool.category}"' in html
    rows = {row.name: row for row in response.context["tools"]}
    assert agent in rows[tool_names[0]].agents
    assert agent.label_es in html


def test_tools_page_speaks_spanish_to_a_spanish_reader(client: Client, cast: Cast) -> None:
    client.force_login(cast.operator)

    shown = tool_table(client.get(URL, HTTP_ACCEPT_LANGUAGE="es-AR,es;q=0.9").content.decode())

    # Every tool, so a tool added without its translation fails here.
    assert set(shown) == {tool.name for tool in all_tools()}
    for tool in all_tools():
        category, description = shown[tool.name]
        assert description and description != tool.description, tool.name
        assert category != tool.category.value, tool.name
    assert shown["job_cancel"] == (
        "ejecución",
        "Cancela un trabajo abierto (necesita la aprobación de un gerente).",
    )


def test_tools_page_in_english_shows_the_models_own_words(client: Client, cast: Cast) -> None:
    client.force_login(cast.operator)

    shown = tool_table(client.get(URL, HTTP_ACCEPT_LANGUAGE="en").content.decode())

    assert shown == {tool.name: (tool.category.value, tool.description) for tool in all_tools()}


def test_the_model_reads_english_whatever_the_readers_language() -> None:
    with translation.override("es-ar"):
        for tool in all_tools():
            assert tool.openai_schema()["function"]["description"] != tool.label
    with translation.override("en"):
        for tool in all_tools():
            assert tool.openai_schema()["function"]["description"] == tool.label


def test_tools_page_shows_only_the_organisations_agents(
    client: Client, cast: Cast, agent: Agent, tool_names: list[str]
) -> None:
    client.force_login(cast.outsider)

    response = client.get(URL)

    assert response.status_code == 200
    assert all(row.agents == [] for row in response.context["tools"])


def test_tools_page_needs_a_login(client: Client, cast: Cast) -> None:
    response = client.get(URL)
    assert response.status_code == 302 and "login" in response["Location"]


def test_tools_page_refuses_a_user_without_organisation(client: Client, cast: Cast) -> None:
    from tests.factories import make_user

    client.force_login(make_user(None, username="suelto"))
    assert client.get(URL).status_code == 403
