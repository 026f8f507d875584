from __future__ import annotations

from html.parser import HTMLParser

import pytest

from agents.models import Agent, AgentVersion
from agents.registry import all_tools
from agents.services import agent_save, agents_install_defaults
from tests.conftest import Cast


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


class _ToolTable(HTMLParser):
    """The text of each table row's cells, as a reader sees them (entities decoded)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag == "td":
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def tool_table(html: str) -> dict[str, tuple[str, str]]:
    """Tool name → (category, description) as a tools page (the panel's or the admin's) shows."""
    reader = _ToolTable()
    reader.feed(html)
    return {row[0]: (row[1], row[2]) for row in reader.rows if len(row) >= 3}
