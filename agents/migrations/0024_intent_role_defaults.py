"""Every existing intent named like a shipped one gets the shipped value of 0023's `role`.

Which intents never act (greeting, farewell, unknown), which one a person hears for anger and
which ones are grievances were tables in copilot/orchestration/nodes.py, copilot/orchestration/write_gate.py,
copilot/orchestration/engines.py and nlu/ordering.py; the registry says it now (issue 24). The emergency was a
table too: it is the intent that is `first`. Intents an organisation added keep the default (a request). Reversing
leaves the values: 0023 drops the field.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

from agents.defaults import fill_shipped

KEYS = ("role",)


def fill(apps: Any, schema_editor: Any) -> None:
    fill_shipped(apps.get_model("agents", "AgentIntent"), KEYS)


class Migration(migrations.Migration):
    dependencies = [("agents", "0023_intent_role")]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
