"""The shipped book_job reads as check_availability when it asks to find (its `found_as`).

"soy Valeria López, ¿me dicen si tienen lugar el sábado…? Todavía no quiero reservar" booked a
visit (issue 24: a question never writes). Only rows that still hold the old shipped value (none)
change: an admin's own choice is kept. Reversing puts the old value back on the rows it changed.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

AGENT, INTENT, OLD, NEW = "scheduling", "book_job", "", "check_availability"


def forward(apps: Any, schema_editor: Any) -> None:
    rows = apps.get_model("agents", "AgentIntent")._default_manager
    rows.filter(agent__name=AGENT, name=INTENT, found_as=OLD).update(found_as=NEW)


def backward(apps: Any, schema_editor: Any) -> None:
    rows = apps.get_model("agents", "AgentIntent")._default_manager
    rows.filter(agent__name=AGENT, name=INTENT, found_as=NEW).update(found_as=OLD)


class Migration(migrations.Migration):
    dependencies = [("agents", "0034_intent_new_as_defaults")]

    operations = [migrations.RunPython(forward, backward)]
