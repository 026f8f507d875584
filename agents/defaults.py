"""The shipped default agents: read `agents/data/default_agents.json`, mirror it into templates.

This module imports no models on purpose: the data migration passes its historical models and the
`agents_sync_defaults` service passes the real ones, so both write the templates the same way and
the migration keeps working after the models grow new fields.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.utils import timezone

from nlu.values import IntentSpec

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
# What the product knows about an intent besides its examples (nlu.values.IntentSpec); the
# defaults file is the one place the shipped intents' values are written.
SPEC_KEYS = (
    "writes", "requires", "after", "first", "creates", "absorbs", "stated_as", "stated_for",
    "found_as", "cue", "phrase_es", "phrase_en", "customers", "tool", "subject", "corrected_by",
    "picked_as", "existing_as", "many_as", "about_work_as", "later_as", "date_is", "role",
    "ends_conversation", "invoice_named_as", "undone_by", "new_as",
)  # fmt: skip
LIST_KEYS = frozenset({"requires", "after", "absorbs", "stated_for"})
INTENT_KEYS = ("description", "examples_es", "examples_en", *SPEC_KEYS)


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
    intent.update({key: item[key] for key in SPEC_KEYS if key in item})
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


def fill_shipped(intent_model: Any, keys: tuple[str, ...]) -> int:
    """Give every intent named like a shipped one (templates and organisations' copies) the
    defaults file's values for `keys`: for a migration that adds those fields (the rows had no
    values of their own to keep). Intents an organisation added keep the fields' defaults.
    Returns how many rows changed."""
    shipped = {
        (agent["name"], intent["name"]): intent
        for agent in load_default_agents()
        for intent in agent["intents"]
    }
    changed = 0
    for row in intent_model._default_manager.select_related("agent"):
        values = {k: v for k, v in shipped.get((row.agent.name, row.name), {}).items() if k in keys}
        if _assign(row, values, set(keys)):
            row.save(update_fields=list(values))
            changed += 1
    return changed


def default_specs(path: Path | None = None) -> dict[str, IntentSpec]:
    """The shipped intents' specs, read from the defaults file (no database): what an intent
    that is not in an organisation's registry falls back to (an old conversation's step)."""
    if path is None:
        return dict(_shipped_specs())
    return _specs_of(load_default_agents(path))


@functools.cache
def _shipped_specs() -> dict[str, IntentSpec]:
    return _specs_of(load_default_agents())


def _specs_of(agents: list[dict[str, Any]]) -> dict[str, IntentSpec]:
    return {
        intent["name"]: intent_spec(agent["name"], intent)
        for agent in agents
        for intent in agent["intents"]
    }


def intent_spec(agent: str, values: dict[str, Any]) -> IntentSpec:
    """An IntentSpec from an intent's values (a defaults-file entry or a row's fields)."""
    fields: dict[str, Any] = {key: values[key] for key in SPEC_KEYS if key in values}
    for key in LIST_KEYS & set(fields):
        fields[key] = tuple(fields[key] or ())
    return IntentSpec(name=values["name"], agent=agent, **fields)


def intent_phrase(
    intent: str, language: str, specs: dict[str, IntentSpec] | None = None, default: str = ""
) -> str:
    """The intent's phrase ("agendar el trabajo") from the organisation's specs when given, else
    the shipped intent's; `default` (or the name in words) for an intent neither knows."""
    spec = (specs or {}).get(intent) or _shipped_specs().get(intent)
    if spec is not None:
        return spec.phrase(language)
    return default or intent.replace("_", " ")
