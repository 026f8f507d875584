"""Every existing intent named like a shipped one gets the shipped values of 0017's fields.

What the record an intent acts on is, what a correction right after its write reads as, what a
pick among its offered options reads as and what a request pointing at an existing record reads
as moved from code tables (copilot/orchestration/nodes.py, copilot/orchestration/write_gate.py, nlu/router.py) into the
registry (issue 24). Intents an organisation added keep the fields' defaults. Reversing leaves
the values: the previous migration drops the fields.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

from agents.defaults import fill_shipped

KEYS = ("subject", "corrected_by", "picked_as", "existing_as")


def fill(apps: Any, schema_editor: Any) -> None:
    fill_shipped(apps.get_model("agents", "AgentIntent"), KEYS)


class Migration(migrations.Migration):
    dependencies = [("agents", "0017_intent_subject_corrections")]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
