"""Writes to the agent registry: defaults, edits with versions, rollbacks.

Every change to an organisation's agent goes through `agent_save`, which validates it, applies it
and records an `AgentVersion` snapshot (all agent fields and its intents) so `agent_rollback` can
restore it exactly.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.translation import gettext as _

from agents.defaults import (
    INTENT_KEYS,
    LIST_KEYS,
    SPEC_KEYS,
    SyncReport,
    load_default_agents,
    upsert_templates,
)
from agents.models import Agent, AgentIntent, AgentVersion
from agents.registry import all_tools
from agents.version_diff import comparable
from business.models import Organisation
from nlu.values import ENTITY_NAMES

Actor = AbstractBaseUser | AnonymousUser | None

# What an edit may change. `name` ties an agent to its code and to `#name` directives, and
# `organisation` to its tenant, so neither is editable.
EDITABLE_FIELDS = (
    "label_es",
    "label_en",
    "category",
    "description",
    "model",
    "tools",
    "min_confidence",
    "max_plan_steps",
    "max_tokens",
    "requires_approval_for",
    "approval_expiry_hours",
    "approval_decider",
    "prompt",
    "context_mode",
    "direct_line",
    "consult_when",
    "enabled",
)
INTENT_FIELDS = ("name", *INTENT_KEYS)
MAX_PLAN_STEPS = 10
MAX_PHRASE = 60  # a consult_when phrase
MAX_APPROVAL_HOURS = 24 * 30
_SLUG = re.compile(r"^[-a-zA-Z0-9_]+$")


# --- validation ---------------------------------------------------------------------------------


def known_tool_names() -> set[str]:
    return {tool.name for tool in all_tools()}


def agent_validate(values: dict[str, Any]) -> None:
    """Raise ValidationError (keyed by field) unless the agent settings are coherent."""
    errors: dict[str, list[str]] = {}
    tools = values.get("tools") or []
    unknown = sorted(set(tools) - known_tool_names())
    if unknown:
        errors.setdefault("tools", []).append(_("Unknown tools: %s.") % ", ".join(unknown))
    confidence = values.get("min_confidence", 0)
    if not isinstance(confidence, int | float) or not 0 <= confidence <= 1:
        errors.setdefault("min_confidence", []).append(
            _("The minimum confidence must be between 0 and 1.")
        )
    steps = values.get("max_plan_steps", 1)
    if not isinstance(steps, int) or not 1 <= steps <= MAX_PLAN_STEPS:
        errors.setdefault("max_plan_steps", []).append(
            _("The maximum plan steps must be between 1 and %d.") % MAX_PLAN_STEPS
        )
    expiry = values.get("approval_expiry_hours", 24)
    if not isinstance(expiry, int) or not 1 <= expiry <= MAX_APPROVAL_HOURS:
        errors.setdefault("approval_expiry_hours", []).append(
            _("The approval expiry must be between 1 and %d hours.") % MAX_APPROVAL_HOURS
        )
    if values.get("approval_decider", "manager") not in ("manager", "admin"):
        errors.setdefault("approval_decider", []).append(_("Choose managers or admins."))
    outside = sorted(set(values.get("requires_approval_for") or []) - set(tools))
    if outside:
        errors.setdefault("requires_approval_for", []).append(
            _("Approval rules name tools the agent does not enable: %s.") % ", ".join(outside)
        )
    phrases = values.get("consult_when") or []
    if not isinstance(phrases, list) or not all(
        isinstance(p, str) and 0 < len(p.strip()) <= MAX_PHRASE for p in phrases
    ):
        errors.setdefault("consult_when", []).append(
            _("Write words or phrases of up to %d characters, one per line.") % MAX_PHRASE
        )
    if errors:
        raise ValidationError(errors)


def _clean_intents(intents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Normalise intents (examples as text, one per line) and reject bad or repeated names."""
    cleaned: list[dict[str, str]] = []
    seen: set[str] = set()
    for item in intents:
        name = str(item.get("name", "")).strip()
        if not name or not _SLUG.match(name):
            raise ValidationError({"intents": _("Invalid intent name: %r.") % name})
        if name in seen:
            raise ValidationError({"intents": _("Repeated intent: %s.") % name})
        seen.add(name)
        row: dict[str, Any] = {"name": name, "description": str(item.get("description", ""))}
        for key in ("examples_es", "examples_en"):
            value = item.get(key) or ""
            lines = value.splitlines() if isinstance(value, str) else list(value)
            row[key] = "\n".join(line.strip() for line in lines if line.strip())
        # An older snapshot or a caller that only edits examples leaves the specs as they are.
        row.update(_clean_spec(name, {k: item[k] for k in SPEC_KEYS if k in item}))
        cleaned.append(row)
    return cleaned


def _clean_spec(name: str, values: dict[str, Any]) -> dict[str, Any]:
    """An intent's spec fields, checked: lists of intent names or entities, a known fact,
    a known tool; ValidationError naming the intent otherwise."""
    problems: list[str] = []
    for key in LIST_KEYS & set(values):
        items = values[key] or []
        if isinstance(items, str):
            items = [part.strip() for part in items.replace(",", "\n").splitlines()]
        values[key] = [str(part).strip() for part in items if str(part).strip()]
        if not all(_SLUG.match(part) for part in values[key]):
            problems.append(key)
    if set(values.get("requires", [])) - set(ENTITY_NAMES):
        problems.append("requires")
    if values.get("stated_as", "") not in AgentIntent.Statement.values:
        problems.append("stated_as")
    for key in ("found_as", "corrected_by", "picked_as", "existing_as", "many_as",
                "about_work_as", "later_as", "invoice_named_as", "undone_by",
                "new_as"):  # fmt: skip
        if values.get(key) and not _SLUG.match(str(values[key])):
            problems.append(key)
    if values.get("subject", "") not in AgentIntent.Subject.values:
        problems.append("subject")
    if values.get("date_is", "") not in AgentIntent.DateIs.values:
        problems.append("date_is")
    if values.get("tool") and values["tool"] not in known_tool_names():
        problems.append("tool")
    if problems:
        raise ValidationError(
            {"intents": _("Intent %(name)s: invalid %(fields)s.")
             % {"name": name, "fields": ", ".join(sorted(set(problems)))}}
        )  # fmt: skip
    return values


# --- snapshots and versions ---------------------------------------------------------------------


def agent_snapshot(agent: Agent) -> dict[str, Any]:
    """Everything a rollback needs: the agent's fields and its intents in order."""
    snapshot: dict[str, Any] = {"name": agent.name}
    snapshot.update({key: getattr(agent, key) for key in EDITABLE_FIELDS})
    snapshot["intents"] = [
        {key: getattr(intent, key) for key in INTENT_FIELDS}
        for intent in AgentIntent.objects.filter(agent=agent).order_by("pk")
    ]
    return snapshot


def _record_version(agent: Agent, actor: Actor, note: str) -> AgentVersion:
    last = AgentVersion.objects.filter(agent=agent).aggregate(n=Max("number"))["n"] or 0
    return AgentVersion.objects.create(
        agent=agent,
        number=last + 1,
        snapshot=agent_snapshot(agent),
        created_by_id=actor.pk if actor is not None and actor.is_authenticated else None,
        note=note[:200],
    )


def _apply_intents(agent: Agent, intents: list[dict[str, Any]]) -> None:
    """Make the agent's intents exactly `intents`, keeping the rows whose name survives."""
    existing = {row.name: row for row in AgentIntent.objects.filter(agent=agent)}
    wanted = {item["name"] for item in intents}
    AgentIntent.objects.filter(agent=agent).exclude(name__in=wanted).delete()
    for item in intents:
        row = existing.get(item["name"]) or AgentIntent(agent=agent, name=item["name"])
        for key in INTENT_KEYS:
            if key in item:
                setattr(row, key, item[key])
        row.save()
    _keep_order(agent, [item["name"] for item in intents])


def _keep_order(agent: Agent, names: list[str]) -> None:
    # Intents are listed by pk. Rows that survive keep theirs, so a restored or reordered list
    # would come back in another order: recreate the rows in the wanted one (nothing points at
    # an intent's pk).
    current = list(AgentIntent.objects.filter(agent=agent).order_by("pk"))
    if [row.name for row in current] == names:
        return
    AgentIntent.objects.filter(agent=agent).delete()
    for row in sorted(current, key=lambda r: names.index(r.name)):
        row.pk = None
        row.save()


def _locked(agent: Agent) -> Agent:
    # Lock the row so two concurrent saves cannot take the same version number.
    return Agent.objects.select_for_update().get(pk=agent.pk)


@transaction.atomic
def agent_save(
    *,
    agent: Agent,
    changes: dict[str, Any],
    intents: list[dict[str, Any]] | None = None,
    actor: Actor = None,
    note: str = "",
) -> Agent:
    """Validate and apply `changes` (and, when given, the full list of intents); record a version.

    An unsaved agent is created (version 1). An agent that has no version yet first gets its
    current state recorded, so the first edit can be rolled back too. A save that changes nothing
    records nothing.
    """
    unknown = sorted(set(changes) - set(EDITABLE_FIELDS))
    if unknown:
        raise ValidationError(_("These fields cannot be edited: %s.") % ", ".join(unknown))
    cleaned_intents = _clean_intents(intents) if intents is not None else None
    creating = agent.pk is None
    row = agent if creating else _locked(agent)
    before = None if creating else agent_snapshot(row)
    if not creating and not AgentVersion.objects.filter(agent=row).exists():
        _record_version(row, actor, _("State before the first recorded edit"))
    for key, value in changes.items():
        if comparable(key, value) != comparable(key, getattr(row, key)):
            setattr(row, key, value)  # a form's round trip (line ends, tool order) is no change
    agent_validate({key: getattr(row, key) for key in EDITABLE_FIELDS})
    row.full_clean(exclude=["updated_at"])
    row.updated_at = timezone.now()
    row.save()
    if cleaned_intents is not None:
        _apply_intents(row, cleaned_intents)
    if before is None or agent_snapshot(row) != before:
        _record_version(row, actor, note or (_("Created") if creating else _("Edited")))
    if agent is not row:
        agent.refresh_from_db()
    return agent


@transaction.atomic
def agent_rollback(*, agent: Agent, version_number: int, actor: Actor = None) -> AgentVersion:
    """Restore the fields and intents of version `version_number`; record it as a new version."""
    try:
        version = AgentVersion.objects.get(agent=agent, number=version_number)
    except AgentVersion.DoesNotExist as exc:
        raise ValidationError(_("Version %d does not exist.") % version_number) from exc
    snapshot = version.snapshot
    row = _locked(agent)
    for key in EDITABLE_FIELDS:
        if key in snapshot:
            setattr(row, key, snapshot[key])
    agent_validate({key: getattr(row, key) for key in EDITABLE_FIELDS})
    row.updated_at = timezone.now()
    row.save()
    _apply_intents(row, _clean_intents(snapshot.get("intents", [])))
    new_version = _record_version(row, actor, _("Rollback to v%d") % version_number)
    agent.refresh_from_db()
    return new_version


# --- defaults -----------------------------------------------------------------------------------


def agents_sync_defaults(*, path: Path | None = None) -> SyncReport:
    """Apply the defaults file to the template rows; organisation copies are not touched."""
    agents = load_default_agents(path)
    with transaction.atomic():
        return upsert_templates(Agent, AgentIntent, agents)


@transaction.atomic
def agents_install_defaults(*, organisation: Organisation) -> list[Agent]:
    """Give `organisation` its own copy of every default agent it lacks (idempotent).

    Agents it already has, edited or not, are left alone. Each copy starts with version 1.
    """
    have = set(Agent.objects.filter(organisation=organisation).values_list("name", flat=True))
    if not Agent.objects.filter(organisation__isnull=True).exists():
        # The data migration creates the templates; a database emptied since (a flush, a
        # restore of business data only) gets them back from the shipped file.
        agents_sync_defaults()
    templates = Agent.objects.filter(organisation__isnull=True).prefetch_related("intents")
    created: list[Agent] = []
    for template in templates:
        if template.name in have:
            continue
        copy = Agent(organisation=organisation, name=template.name)
        for key in EDITABLE_FIELDS:
            setattr(copy, key, getattr(template, key))
        copy.save()
        AgentIntent.objects.bulk_create(
            AgentIntent(agent=copy, **{key: getattr(i, key) for key in INTENT_FIELDS})
            for i in template.intents.all()
        )
        _record_version(copy, None, _("Installed from the defaults"))
        created.append(copy)
    return created
