"""Organisations' copies of search_customer learn first-person questions about one's own jobs.

A customer writing on WhatsApp (issue 14.3) asks "¿qué trabajos tengo?", "¿cuándo viene el
técnico?", "is my visit confirmed?": with the customer pinned, search_customer shows their own
file — open jobs with day and time first. The router read these as follow-ups, cancellations or
availability; the defaults now carry these examples, and every organisation's existing copy of
the intent gets the ones it lacks (appended, its own examples untouched). Reversing removes
exactly these lines.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

INTENT = "search_customer"
EXAMPLES_ES = [
    "¿Qué trabajos tengo agendados con ustedes?",
    "¿tengo alguna visita programada?",
    "mis visitas",
    "¿Qué día me toca la visita?",
    "¿A qué hora viene el técnico a mi casa?",
    "¿Cuándo es mi próxima visita?",
    "¿Está confirmado mi turno?",
    "¿Quedó agendado mi service?",
    "¿Qué turnos tengo pendientes?",
    "quiero ver mis trabajos",
    "¿Para qué día quedó mi visita?",
    "¿El técnico viene hoy a casa?",
    "¿A qué hora me toca mañana?",
    "¿tengo algo agendado con ustedes?",
    "¿me confirmás a qué hora vienen?",
]
EXAMPLES_EN = [
    "What appointments do I have with you?",
    "do I have a visit booked?",
    "my jobs",
    "When is your technician coming to my place?",
    "when will the tech get to my house?",
    "When is my next visit?",
    "Is my appointment confirmed?",
    "did my service get booked?",
    "what visits do I have pending?",
    "show me my bookings",
    "what day is my visit?",
    "will the technician come today?",
    "do I have anything booked this week?",
    "what time are you coming to my place tomorrow?",
]
FIELDS = (("examples_es", EXAMPLES_ES), ("examples_en", EXAMPLES_EN))


def _lines(block: str) -> list[str]:
    return [line for line in (block or "").splitlines() if line.strip()]


def add_examples(apps: Any, schema_editor: Any) -> None:
    AgentIntent = apps.get_model("agents", "AgentIntent")
    for intent in AgentIntent.objects.filter(name=INTENT):
        changed = []
        for field, examples in FIELDS:
            lines = _lines(getattr(intent, field))
            have = {line.strip().casefold() for line in lines}
            missing = [text for text in examples if text.casefold() not in have]
            if missing:
                setattr(intent, field, "\n".join([*lines, *missing]))
                changed.append(field)
        if changed:
            intent.save(update_fields=changed)


def remove_examples(apps: Any, schema_editor: Any) -> None:
    AgentIntent = apps.get_model("agents", "AgentIntent")
    for intent in AgentIntent.objects.filter(name=INTENT):
        changed = []
        for field, examples in FIELDS:
            lines = _lines(getattr(intent, field))
            kept = [line for line in lines if line.strip() not in examples]
            if kept != lines:
                setattr(intent, field, "\n".join(kept))
                changed.append(field)
        if changed:
            intent.save(update_fields=changed)


class Migration(migrations.Migration):
    dependencies = [("agents", "0013_abtests")]

    operations = [migrations.RunPython(add_examples, remove_examples)]
