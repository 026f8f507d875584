"""Every existing intent named like a shipped one gets the shipped value of 0021's `date_is`.

Which intents carry a date of their own and which move something to a date was two tables in
nlu/entities.py (DATED_INTENTS, MOVE_INTENTS); the registry says it now (issue 24). Intents an
organisation added keep the default (""). Reversing leaves the values: 0021 drops the field.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

from agents.defaults import fill_shipped

KEYS = ("date_is",)


def fill(apps: Any, schema_editor: Any) -> None:
    fill_shipped(apps.get_model("agents", "AgentIntent"), KEYS)


class Migration(migrations.Migration):
    dependencies = [("agents", "0021_intent_date_is")]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
