"""Every existing intent named like a shipped one gets the shipped values of 0019's fields.

The relabelling rules of nlu/ordering.py named their intents in code (frustration about the work
→ complaint, a move of many jobs → bulk_reschedule, a dispatch for a later day → book_job); the
registry says them now (issue 24). Intents an organisation added keep the fields' defaults.
Reversing leaves the values: the previous migration drops the fields.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

from agents.defaults import fill_shipped

KEYS = ("many_as", "about_work_as", "later_as")


def fill(apps: Any, schema_editor: Any) -> None:
    fill_shipped(apps.get_model("agents", "AgentIntent"), KEYS)


class Migration(migrations.Migration):
    dependencies = [("agents", "0019_intent_relabel_forms")]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
