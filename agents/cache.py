"""An organisation's enabled agents (with their intents) and running A/B tests, kept between
turns (issue 26.5): a turn used to read them afresh — three statements on every turn for rows
an admin changes a few times a month.

`turn_agents` hands each turn its own copies of the kept agents (a turn may set attributes on
an agent, as an A/B arm does; the kept ones never change) and the kept running tests. The
entry is dropped at once when this process saves or deletes an agent, an intent, an A/B test
or an agent's version (signals in agents/apps.py, and the A/B services that write with
`update`), and re-read after `AGENTS_CACHE_SECONDS` (5 s) for what other processes wrote —
the router's registry fingerprint follows the same rhythm (copilot/router_cache.py).
`AGENTS_CACHE_SECONDS = 0` reads afresh every time (the tests' default).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from django.conf import settings

from agents.models import ABTest, Agent
from agents.selectors import agents_for_org, running_tests
from business.models import Organisation
from common.kept import Kept


@dataclass(frozen=True)
class _Turn:
    agents: tuple[Agent, ...]
    tests: tuple[ABTest, ...]


def seconds() -> float:
    return float(getattr(settings, "AGENTS_CACHE_SECONDS", 5.0))


_kept: Kept[_Turn] = Kept(seconds)


def turn_agents(organisation: Organisation) -> tuple[dict[str, Agent], list[ABTest]]:
    """The enabled agents by name (this turn's own copies) and the running A/B tests."""
    kept = _kept.get(
        organisation.pk,
        lambda: _Turn(
            agents=tuple(agents_for_org(organisation)),
            tests=tuple(running_tests(organisation)),
        ),
    )
    return {agent.name: own_copy(agent) for agent in kept.agents}, list(kept.tests)


def own_copy(agent: Agent) -> Agent:
    """A copy a turn may change (same pk, never saved); what it was read with stays shared."""
    mine = copy.copy(agent)
    mine._state = copy.copy(agent._state)
    return mine


def forget(organisation_id: int | None = None) -> None:
    """Drop what is kept: one organisation's, or (None) every organisation's."""
    _kept.forget(organisation_id)
