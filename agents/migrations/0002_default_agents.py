"""Create the seven shipped default agents (organisation NULL) from agents/data/default_agents.json.

The file is read when the migration runs, so it may keep evolving; later edits reach existing
databases through `manage.py sync_default_agents`, not through new migrations.
"""

from django.db import migrations

from agents.defaults import load_default_agents, upsert_templates


def create_default_agents(apps, schema_editor):
    agent_model = apps.get_model("agents", "Agent")
    intent_model = apps.get_model("agents", "AgentIntent")
    upsert_templates(agent_model, intent_model, load_default_agents())


def delete_default_agents(apps, schema_editor):
    apps.get_model("agents", "Agent").objects.filter(organisation__isnull=True).delete()


class Migration(migrations.Migration):

    dependencies = [
        ("agents", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(create_default_agents, delete_default_agents),
    ]
