"""Every existing intent named like a shipped one gets the shipped value of 0033's `new_as`.

update_customer about a customer the message says is new reads as create_customer (issue 24:
"es nueva, cargala con el cel …" updated nobody: a write the message did not ask for). Intents
an organisation added keep the field's default. Reversing leaves the values: the previous
migration drops the field.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

from agents.defaults import fill_shipped

KEYS = ("new_as",)


def fill(apps: Any, schema_editor: Any) -> None:
    fill_shipped(apps.get_model("agents", "AgentIntent"), KEYS)


class Migration(migrations.Migration):
    dependencies = [("agents", "0033_intent_new_as")]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
