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
import threading
import time
from dataclasses import dataclass

from django.conf import settings

from agents.models import ABTest, Agent
from agents.selectors import agents_for_org, running_tests
from business.models import Organisation


@dataclass(frozen=True)
class _Kept:
    agents: tuple[Agent, ...]
    tests: tuple[ABTest, ...]
    at: float


_kept: dict[int, _Kept] = {}
_lock = threading.Lock()
_generation = 0  # moves on every change: a read that began before one is not kept


def seconds() -> float:
    return float(getattr(settings, "AGENTS_CACHE_SECONDS", 5.0))


def turn_agents(organisation: Organisation) -> tuple[dict[str, Agent], list[ABTest]]:
    """The enabled agents by name (this turn's own copies) and the running A/B tests."""
    ttl = seconds()
    kept = _kept.get(organisation.pk)
    if kept is None or time.monotonic() - kept.at >= ttl:
        kept = _read(organisation, keep=ttl > 0)
    return {agent.name: own_copy(agent) for agent in kept.agents}, list(kept.tests)


def _read(organisation: Organisation, *, keep: bool) -> _Kept:
    began = _generation
    kept = _Kept(
        agents=tuple(agents_for_org(organisation)),
        tests=tuple(running_tests(organisation)),
        at=time.monotonic(),
    )
    with _lock:
        if keep and began == _generation:
            _kept[organisation.pk] = kept
    return kept


def own_copy(agent: Agent) -> Agent:
    """A copy a turn may change (same pk, never saved); what it was read with stays shared."""
    mine = copy.copy(agent)
    mine._state = copy.copy(agent._state)
    return mine


def forget(organisation_id: int | None = None) -> None:
    """Drop what is kept: one organisation's, or (None) every organisation's."""
    global _generation
    with _lock:
        _generation += 1
        if organisation_id is None:
            _kept.clear()
        else:
            _kept.pop(organisation_id, None)
