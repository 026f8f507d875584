"""The direct line (T2): `#agent text` goes verbatim to that agent and its answer comes back
verbatim, attributed; `#agent` alone keeps the line open across turns until `#salir`/`#exit`.

The open line lives in the conversation's state (`direct_line`: the agent's name), so it survives
reloads and reaches every entry point; the panel shows an indicator while it is open. While open,
a message without its own `#…` is read as `#<that agent> <message>`; a `#other text` is a one-off
to another agent and leaves the line as it was; `#other` alone moves the line.

Per agent, the line is *strict* (the orchestrator adds nothing to the agent's block) or *guarded*
(it may add its own notes after the block — a held action, what was not done — each one separate,
attributed to the copilot and recorded in the trace as an intervention).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.models import Agent
from common.text import fold

STATE_KEY = "direct_line"
# `#salir`, `#exit`: the deterministic way out (the indicator's close button sends one of them).
EXIT_WORDS = frozenset({"salir", "exit", "quit", "cerrar", "close"})


def is_exit(name: str) -> bool:
    return fold(name).strip().rstrip(".") in EXIT_WORDS


def open_agent(state: Mapping[str, Any], agents: Mapping[str, Agent]) -> Agent | None:
    """The agent the conversation's line is open to, while it is still enabled."""
    name = state.get(STATE_KEY)
    return agents.get(name) if isinstance(name, str) and name else None


def remembered(state: dict[str, Any], line: str | None) -> dict[str, Any]:
    """The conversation state with the line as this turn left it (None: unchanged)."""
    if line is None:
        return state
    updated = dict(state)
    if line:
        updated[STATE_KEY] = line
    else:
        updated.pop(STATE_KEY, None)
    return updated
