"""Every existing intent named like a shipped one gets the shipped facts about it.

What the product knows about an intent moved from code tables into the registry (issue 24):
whether it writes, what it runs after, what it absorbs, the fact a message may state for it, its
question form, its phrases, whether customers may use it and its tool. The templates and every
organisation's copy of a shipped intent get the defaults file's values (an organisation's copy
had none to keep: the fields are new). Intents an organisation added keep the fields' defaults.
Reversing leaves the values: the previous migration drops the fields.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

from agents.defaults import SPEC_KEYS, load_default_agents


def fill(apps: Any, schema_editor: Any) -> None:
    AgentIntent = apps.get_model("agents", "AgentIntent")
    shipped = {
        (agent["name"], intent["name"]): intent
        for agent in load_default_agents()
        for intent in agent["intents"]
    }
    for row in AgentIntent.objects.select_related("agent"):
        values = shipped.get((row.agent.name, row.name))
        if values is None:
            continue
        for key in SPEC_KEYS:
            if key in values:
                setattr(row, key, values[key])
        row.save(update_fields=[key for key in SPEC_KEYS if key in values])


class Migration(migrations.Migration):
    dependencies = [("agents", "0015_intent_facts")]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
