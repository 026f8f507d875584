"""Every existing intent named like a shipped one gets the shipped value of 0029's `undone_by`.

Which answers offer an undo (a booking, undone by cancel_job) was a name in copilot/panel.py;
the registry says it now (issue 24). Intents an organisation added keep the default (empty: no
undo). Reversing leaves the values: 0029 drops the field.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

from agents.defaults import fill_shipped

KEYS = ("undone_by",)


def fill(apps: Any, schema_editor: Any) -> None:
    fill_shipped(apps.get_model("agents", "AgentIntent"), KEYS)


class Migration(migrations.Migration):
    dependencies = [("agents", "0029_intent_undone_by")]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
