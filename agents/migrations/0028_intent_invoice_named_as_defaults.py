"""Every existing intent named like a shipped one gets the shipped value of 0027's
`invoice_named_as`.

What a request that names an invoice by its number reads as (its payment status: the invoice
exists already) was a table in nlu/references.py; the registry says it now (issue 24). Intents
an organisation added keep the default (empty: a named invoice changes nothing). Reversing
leaves the values: 0027 drops the field.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

from agents.defaults import fill_shipped

KEYS = ("invoice_named_as",)


def fill(apps: Any, schema_editor: Any) -> None:
    fill_shipped(apps.get_model("agents", "AgentIntent"), KEYS)


class Migration(migrations.Migration):
    dependencies = [("agents", "0027_intent_invoice_named_as")]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
