"""The fleet, escalation, proactive and general agents for handler tests.

`conftest.Desk` runs the scheduling, customer and financial agents at a fixed Monday 07:00;
these four need their own agent rows and, for dispatch and emergencies, a moment when the crew
is at work. `Office` is a Desk over these agents whose clock a test may move.
"""

from __future__ import annotations

from typing import Any

from agents.defaults import load_default_agents
from agents.models import Agent
from agents.services import agents_install_defaults
from business.models import Organisation
from tests.handlers.conftest import Desk


def _shipped() -> dict[str, dict[str, Any]]:
    return {agent["name"]: agent for agent in load_default_agents()}


# The shipped tools and plan budgets (agents/data/default_agents.json), plus the reads these
# handlers use when they are enabled: the fleet agent reads jobs (a dispatch or a vehicle "for
# Juan's job"); the escalation agent reads the customer's file (their latest job) and proposes
# the nearest technician in an emergency.
EXTRA_TOOLS: dict[str, list[str]] = {
    "fleet": ["jobs_find"],
    "escalation": ["customer_history", "technicians_nearest"],
    "proactive": [],
    "general": [],
}
SHIPPED_TOOLS: dict[str, list[str]] = {
    name: list(_shipped()[name]["tools"]) for name in EXTRA_TOOLS
}
OFFICE_TOOLS: dict[str, list[str]] = {
    name: [*SHIPPED_TOOLS[name], *extra] for name, extra in EXTRA_TOOLS.items()
}


def install_office_agents(
    organisation: Organisation, tools: dict[str, list[str]] | None = None
) -> dict[str, Agent]:
    agents_install_defaults(organisation=organisation)
    shipped = _shipped()
    rows: dict[str, Agent] = {}
    for name, enabled in (tools or OFFICE_TOOLS).items():
        Agent.objects.update_or_create(
            organisation=organisation,
            name=name,
            defaults={"tools": enabled, "requires_approval_for": [], "enabled": True,
                      "max_plan_steps": shipped[name]["max_plan_steps"], "label_es": name,
                      "label_en": name, "category": name, "description": name},
        )  # fmt: skip
        rows[name] = Agent.objects.get(organisation=organisation, name=name)
    return rows


# The four agents' tests read as an office at work; the desk already takes its clock.
Office = Desk
