"""Organisations' copies of the default agents get the tools their handlers now call.

Copies are the organisations' own and are never overwritten (`sync_default_agents` updates the
templates only), but these tools are new — no admin could have removed them — and without them
the new handlers answer "tool not enabled": a quote or ticket by number (quote_find,
ticket_find), booking by an address (customers_find for scheduling), recording a follow-up
from a suggestion (follow_up_record). Only added, never removed; reversing removes nothing.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

NEW_TOOLS = {
    "scheduling": ["customers_find"],
    "financial": ["quote_find"],
    "escalation": ["ticket_find"],
    "proactive": ["follow_up_record"],
}


def add_tools(apps: Any, schema_editor: Any) -> None:
    Agent = apps.get_model("agents", "Agent")
    for name, tools in NEW_TOOLS.items():
        for agent in Agent.objects.filter(name=name):
            missing = [tool for tool in tools if tool not in (agent.tools or [])]
            if missing:
                agent.tools = [*(agent.tools or []), *missing]
                agent.save(update_fields=["tools"])


class Migration(migrations.Migration):
    dependencies = [("agents", "0010_agent_consult_when")]

    operations = [migrations.RunPython(add_tools, migrations.RunPython.noop)]
