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

from agents.defaults import fill_shipped

# The fields 0015 added (later migrations fill the fields they add themselves).
KEYS = (
    "writes", "requires", "after", "first", "creates", "absorbs", "stated_as", "stated_for",
    "found_as", "cue", "phrase_es", "phrase_en", "customers", "tool",
)


def fill(apps: Any, schema_editor: Any) -> None:
    fill_shipped(apps.get_model("agents", "AgentIntent"), KEYS)


class Migration(migrations.Migration):
    dependencies = [("agents", "0015_intent_facts")]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
