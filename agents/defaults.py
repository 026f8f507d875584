"""The shipped default agents: read `agents/data/default_agents.json`, mirror it into templates.

This module imports no models on purpose: the data migration passes its historical models and the
`agents_sync_defaults` service passes the real ones, so both write the templates the same way and
the migration keeps working after the models grow new fields.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.utils import timezone

DEFAULTS_FILE = Path(__file__).resolve().parent / "data" / "default_agents.json"

AGENT_KEYS = (
    "label_es",
    "label_en",
    "category",
    "description",
    "model",
    "min_confidence",
    "max_plan_steps",
    "requires_approval_for",
    "tools",
    "prompt",
)
INTENT_KEYS = ("description", "examples_es", "examples_en")


class DefaultsFileError(ValueError):
    """The defaults file is missing or malformed; the message says where."""


@dataclass
class SyncReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        parts = [
            f"{label}: {', '.join(names)}"
            for label, names in (
                ("created", self.created),
                ("updated", self.updated),
                ("deleted", self.deleted),
            )
            if names
        ]
        return "; ".join(parts) or f"unchanged ({len(self.unchanged)} agents)"


def load_default_agents(path: Path | None = None) -> list[dict[str, Any]]:
    """The agents of the defaults file, examples joined one per line as the models store them."""
    path = path or DEFAULTS_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DefaultsFileError(f"cannot read {path}: {exc}") from exc
    if not isinstance(raw, list):
        raise DefaultsFileError(f"{path}: expected a list of agents")
    return [_normalise_agent(item, path) for item in raw]


def _normalise_agent(item: Any, path: Path) -> dict[str, Any]:
    if not isinstance(item, dict) or not item.get("name"):
        raise DefaultsFileError(f"{path}: every agent needs a name, got {item!r:.80}")
    agent = {key: item[key] for key in AGENT_KEYS if key in item}
    agent["name"] = item["name"]
    agent["intents"] = [_normalise_intent(intent, item["name"], path) for intent in item["intents"]]
    return agent


def _normalise_intent(item: Any, agent_name: str, path: Path) -> dict[str, Any]:
    if not isinstance(item, dict) or not item.get("name"):
        raise DefaultsFileError(f"{path}: agent {agent_name} has an intent without a name")
    intent: dict[str, Any] = {"name": item["name"], "description": item.get("description", "")}
    for key in ("examples_es", "examples_en"):
        value = item.get(key, [])
        lines = value.splitlines() if isinstance(value, str) else value
        intent[key] = "\n".join(line.strip() for line in lines if line.strip())
    return intent


def _field_names(model: Any) -> set[str]:
    return {f.name for f in model._meta.concrete_fields}


def _assign(row: Any, values: dict[str, Any], allowed: set[str]) -> bool:
    """Set the values the model knows about; True when anything changed."""
    changed = False
    for key, value in values.items():
        if key in allowed and getattr(row, key) != value:
            setattr(row, key, value)
            changed = True
    return changed


def upsert_templates(
    agent_model: Any, intent_model: Any, agents: list[dict[str, Any]]
) -> SyncReport:
    """Make the template rows (organisation NULL) equal the file; organisation copies untouched.

    Agents and intents are matched by name. Templates no longer in the file are deleted: the file
    is their only source, and organisations keep their own copies.
    """
    report = SyncReport()
    agent_fields, intent_fields = _field_names(agent_model), _field_names(intent_model)
    templates = agent_model._default_manager.filter(organisation__isnull=True)
    existing = {row.name: row for row in templates}
    for data in agents:
        row = existing.pop(data["name"], None)
        created = row is None
        if row is None:
            row = agent_model(name=data["name"], organisation=None)
        fields = {k: v for k, v in data.items() if k != "intents"}
        changed = _assign(row, fields, agent_fields)
        if changed or created:
            if "updated_at" in agent_fields:
                row.updated_at = timezone.now()
            row.save()
        changed = _sync_intents(intent_model, row, data["intents"], intent_fields) or changed
        target = report.created if created else report.updated if changed else report.unchanged
        target.append(row.name)
    for name, row in existing.items():
        row.delete()
        report.deleted.append(name)
    return report


def _sync_intents(
    intent_model: Any, agent: Any, intents: list[dict[str, Any]], allowed: set[str]
) -> bool:
    changed = False
    existing = {row.name: row for row in intent_model._default_manager.filter(agent=agent)}
    for data in intents:
        row = existing.pop(data["name"], None)
        if row is None:
            row = intent_model(agent=agent, name=data["name"])
            _assign(row, data, allowed)
            row.save()
            changed = True
        elif _assign(row, data, allowed):
            row.save()
            changed = True
    for row in existing.values():
        row.delete()
        changed = True
    return changed
