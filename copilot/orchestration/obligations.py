"""Obligations (T3): agents a turn must consult, and whether it did.

A turn carries "agent X must be consulted" from three places:
  - a directive (`#agent text`: that agent),
  - an agent's rule (its "must be consulted when a message mentions" phrases, e.g. money words
    for Finanzas), and
  - the operator ticking agents under the composer (stored with the message).
On the embedded engine a missing agent's step is added to the chain (copilot/orchestration/nodes.py
`_obliged`); on the llm engine the orchestrator is made to call it (`orchestration/orchestrator.py`,
`tool_choice`), a bounded number of times. After the chain ran, `unmet` says which were not
met: recorded as failed in the trace, and the reply says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from agents.models import Agent
from common.text import fold_keep_length

DIRECTIVE, RULE, OPERATOR = "directive", "rule", "operator"
MAX_TICKED = 8  # agents an operator may tick on one message


@dataclass(frozen=True)
class Obligation:
    agent: str  # the agent's name ("" when the operator ticked one that does not exist)
    source: str  # directive, rule or operator
    asked: str = ""  # what was asked for, as given (an operator's unknown name stays visible)

    def as_trace(self) -> dict[str, str]:
        return {"agent": self.agent, "source": self.source, "asked": self.asked}


def directive(agent: str) -> Obligation:
    """`#agent …`: that agent must answer."""
    return Obligation(agent, DIRECTIVE, agent)


def mentions(text: str, phrases: Iterable[str]) -> str:
    """The first phrase the text mentions (folded, whole words), or ""."""
    folded = fold_keep_length(text)
    for phrase in phrases:
        wanted = " ".join(fold_keep_length(phrase).split())
        if wanted and re.search(rf"(?<!\w){re.escape(wanted)}(?!\w)", folded):
            return phrase
    return ""


def obligations_for(
    text: str,
    agents: Mapping[str, Agent],
    *,
    directive_agent: str = "",
    ticked: Sequence[str] = (),
) -> list[Obligation]:
    """Every agent this message must consult, once each, in the order the sources name them."""
    found: list[Obligation] = []
    seen: set[str] = set()

    def add(obligation: Obligation) -> None:
        key = obligation.agent or f"?{obligation.asked}"
        if key not in seen:
            seen.add(key)
            found.append(obligation)

    if directive_agent:
        add(directive(directive_agent))
    for name in ticked[:MAX_TICKED]:
        add(Obligation(name if name in agents else "", OPERATOR, name))
    for agent in agents.values():
        if phrase := mentions(text, agent.consult_when or []):
            add(Obligation(agent.name, RULE, phrase))
    return found


def unmet(obligations: Sequence[Obligation], agents_run: Iterable[str]) -> list[Obligation]:
    """The obligations no step of the turn met (an agent that yielded did not act)."""
    ran = set(agents_run)
    return [o for o in obligations if not o.agent or o.agent not in ran]
