"""Organisations' copies of the default agents get what this release's defaults added.

- The tools a WhatsApp photo's records are now written with, through `Runner.call`
  (whatsapp/photo_records.py): `equipment_record` for the customer agent and `job_note_add` for
  scheduling. New tools no admin could have removed; without them a photo is read and answered but
  linked to nothing.
- The escalate intent's new phrasings of a request for a person ("¿hay alguien ahí que me pueda
  atender?" was read as a greeting), which the WhatsApp hand-over reads (issue 27.4).
Only added, never removed: the organisations' own tools and examples are left as they are;
reversing removes exactly these.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

NEW_TOOLS = {"customer": ["equipment_record"], "scheduling": ["job_note_add"]}
INTENT = "escalate"
EXAMPLES = {
    "examples_es": [
        "¿hay alguien ahí que me pueda atender?",
        "¿me pasás con alguien de atención al cliente?",
        "¿me atiende alguien de carne y hueso?",
        "quiero que me conteste una persona",
    ],
    "examples_en": [
        "can I get a real person on the line?",
        "I'd like someone from your team to answer me",
    ],
}


def _lines(block: str) -> list[str]:
    return [line for line in (block or "").splitlines() if line.strip()]


def forwards(apps: Any, schema_editor: Any) -> None:
    Agent = apps.get_model("agents", "Agent")
    AgentIntent = apps.get_model("agents", "AgentIntent")
    for name, tools in NEW_TOOLS.items():
        for agent in Agent.objects.filter(name=name):
            missing = [tool for tool in tools if tool not in (agent.tools or [])]
            if missing:
                agent.tools = [*(agent.tools or []), *missing]
                agent.save(update_fields=["tools"])
    for intent in AgentIntent.objects.filter(name=INTENT):
        changed = []
        for field, examples in EXAMPLES.items():
            lines = _lines(getattr(intent, field))
            have = {line.strip().casefold() for line in lines}
            missing = [text for text in examples if text.casefold() not in have]
            if missing:
                setattr(intent, field, "\n".join([*lines, *missing]))
                changed.append(field)
        if changed:
            intent.save(update_fields=changed)


def backwards(apps: Any, schema_editor: Any) -> None:
    Agent = apps.get_model("agents", "Agent")
    AgentIntent = apps.get_model("agents", "AgentIntent")
    for name, tools in NEW_TOOLS.items():
        for agent in Agent.objects.filter(name=name):
            kept = [tool for tool in (agent.tools or []) if tool not in tools]
            if kept != (agent.tools or []):
                agent.tools = kept
                agent.save(update_fields=["tools"])
    for intent in AgentIntent.objects.filter(name=INTENT):
        changed = []
        for field, examples in EXAMPLES.items():
            lines = _lines(getattr(intent, field))
            kept = [line for line in lines if line.strip() not in examples]
            if kept != lines:
                setattr(intent, field, "\n".join(kept))
                changed.append(field)
        if changed:
            intent.save(update_fields=changed)


class Migration(migrations.Migration):
    dependencies = [("agents", "0030_intent_undone_by_defaults")]

    operations = [migrations.RunPython(forwards, backwards)]
