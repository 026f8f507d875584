"""Every existing intent named like a shipped one gets the shipped value of 0025's
`ends_conversation`.

The farewell was a name in copilot/turn.py (a goodbye extracts the conversation's customer
profiles); the registry says it now (issue 24). It is a flag beside the role, not a role of its
own: the farewell stays a courtesy. Intents an organisation added keep the default (False).
Reversing leaves the values: 0025 drops the field.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

from agents.defaults import fill_shipped

KEYS = ("ends_conversation",)


def fill(apps: Any, schema_editor: Any) -> None:
    fill_shipped(apps.get_model("agents", "AgentIntent"), KEYS)


class Migration(migrations.Migration):
    dependencies = [("agents", "0025_intent_ends_conversation")]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
