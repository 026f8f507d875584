"""Datasets and cases in the database (V1): import and export in PRODUCT.md's JSONL format, the
shipped golden set for every organisation, and each case checked against the registry.

An import reads the whole file first; any bad line (not JSON, a missing or wrong field, an
intent or agent the organisation's registry does not have, an entity the format does not know)
rejects the import with every bad line's number and nothing is stored.
"""

from __future__ import annotations

import datetime
import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.translation import gettext as _

from agents.models import Agent, AgentIntent
from business.models import Organisation
from evaluation import jsonlines, metrics
from evaluation.models import GOLDEN_NAME, Case, Dataset

GOLDEN_PATH = Path(__file__).resolve().parent / "datasets" / "golden.jsonl"
GOLDEN_REFERENCE_DATE = datetime.date(2026, 11, 18)  # evaluation/datasets/README.md
ENTITY_KEYS = ("customer", "technician", "date", "time", "cuit", "amount", "service")
MAX_INPUT = 4000
MAX_LINES = 20000
MAX_BAD_LINES_SHOWN = 20
_TIME = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")
_CUIT = re.compile(r"^\d{2}-\d{8}-\d$")
_AMOUNT = re.compile(r"^\d+(\.\d+)?$")


class DatasetError(Exception):
    """The input cannot be taken as it is; `problems` says where and why."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Registry:
    """What the organisation's agents understand: intent → owning agent."""

    intent_agent: dict[str, str]

    @property
    def agents(self) -> set[str]:
        return set(self.intent_agent.values())


def registry_of(organisation: Organisation) -> Registry:
    rows = AgentIntent.objects.filter(agent__organisation=organisation).values_list(
        "name", "agent__name"
    )
    return Registry(intent_agent=dict(rows))


# --- one case ----------------------------------------------------------------------------------


def case_problems(data: Any, registry: Registry) -> list[str]:
    """Why this JSON object is not a valid case for this registry (empty: it is)."""
    if not isinstance(data, dict):
        return [_("a line must be a JSON object")]
    problems: list[str] = []
    text = data.get("input")
    if not isinstance(text, str) or not text.strip():
        problems.append(_("'input' must be a non-empty text"))
    elif len(text) > MAX_INPUT:
        problems.append(_("'input' is longer than %d characters") % MAX_INPUT)
    elif "\x00" in text:
        problems.append(_("'input' has a NUL character"))
    intents = data.get("expected_intents")
    if not isinstance(intents, list) or not intents or not all(isinstance(i, str) for i in intents):
        problems.append(_("'expected_intents' must be a non-empty list of intent names"))
    else:
        unknown = [i for i in intents if i not in registry.intent_agent]
        if unknown:
            problems.append(_("unknown intent: %s") % ", ".join(unknown))
    agents = data.get("expected_agents", [])
    if not isinstance(agents, list) or not all(isinstance(a, str) for a in agents):
        problems.append(_("'expected_agents' must be a list of agent names"))
    else:
        unknown = [a for a in agents if a not in registry.agents]
        if unknown:
            problems.append(_("unknown agent: %s") % ", ".join(unknown))
        if agents and isinstance(intents, list) and len(agents) != len(intents):
            problems.append(_("'expected_agents' must name one agent per expected intent"))
    problems.extend(_entity_problems(data.get("expected_entities", {})))
    if not isinstance(data.get("lang", ""), str) or len(str(data.get("lang", ""))) > 5:
        problems.append(_("'lang' must be a short language code"))
    tags = data.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) and t for t in tags):
        problems.append(_("'tags' must be a list of words"))
    if not isinstance(data.get("id", ""), str | int) or len(str(data.get("id", ""))) > 80:
        problems.append(_("'id' must be a short text or number"))
    return problems


def _entity_problems(entities: Any) -> list[str]:
    if entities is None:
        return []
    if not isinstance(entities, dict):
        return [_("'expected_entities' must be an object")]
    problems: list[str] = []
    for key, value in entities.items():
        if key not in ENTITY_KEYS:
            problems.append(_("unknown entity %(key)s (one of %(keys)s)")
                            % {"key": key, "keys": ", ".join(ENTITY_KEYS)})  # fmt: skip
            continue
        if not isinstance(value, str | int | float) or not str(value).strip():
            problems.append(_("entity %s must be a non-empty value") % key)
            continue
        text = str(value)
        if key == "date":
            try:
                datetime.date.fromisoformat(text)
            except ValueError:
                problems.append(_("entity date must be YYYY-MM-DD"))
        elif key == "time" and not _TIME.match(text):
            problems.append(_("entity time must be HH:MM"))
        elif key == "cuit" and not _CUIT.match(text):
            problems.append(_("entity cuit must be NN-NNNNNNNN-N"))
        elif key == "amount" and not _AMOUNT.match(text):
            problems.append(_("entity amount must be a plain number"))
    return problems


def case_fields(data: dict[str, Any]) -> dict[str, Any]:
    """A valid JSON case as the model's fields."""
    return {
        "external_id": str(data.get("id", "")),
        "input": data["input"].strip(),
        "expected_intents": list(data["expected_intents"]),
        "expected_agents": list(data.get("expected_agents", [])),
        "expected_entities": {k: str(v) for k, v in (data.get("expected_entities") or {}).items()},
        "lang": str(data.get("lang", "")),
        "tags": list(data.get("tags", [])),
    }


def case_json(case: Case) -> dict[str, Any]:
    """One exported line: PRODUCT.md's keys, the optional ones only when set."""
    data: dict[str, Any] = {}
    if case.external_id:
        data["id"] = case.external_id
    data["input"] = case.input
    data["expected_intents"] = case.expected_intents
    if case.expected_agents:
        data["expected_agents"] = case.expected_agents
    if case.expected_entities:
        data["expected_entities"] = case.expected_entities
    if case.lang:
        data["lang"] = case.lang
    if case.tags:
        data["tags"] = case.tags
    return data


def as_eval_case(case: Case) -> metrics.Case:
    """What the evaluation reads (evaluation/metrics.py)."""
    return metrics.Case(
        input=case.input,
        expected_intents=list(case.expected_intents),
        expected_agents=list(case.expected_agents),
        expected_entities=dict(case.expected_entities),
        lang=case.lang,
        tags=list(case.tags),
        id=case.case_id,
    )


# --- files -------------------------------------------------------------------------------------


def parse_jsonl(text: str, registry: Registry) -> list[dict[str, Any]]:
    """Every case of the file, or DatasetError naming each bad line (1-based)."""
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        raise DatasetError([_("more than %d lines") % MAX_LINES])
    cases: list[dict[str, Any]] = []
    problems: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = jsonlines.loads(line)
        except ValueError:
            found = [_("not valid JSON")]
        else:
            found = case_problems(data, registry)
        if found:
            problems.append(_("line %(n)d: %(why)s") % {"n": number, "why": "; ".join(found)})
        else:
            cases.append(case_fields(data))
    if problems:
        shown = problems[:MAX_BAD_LINES_SHOWN]
        if len(problems) > len(shown):
            shown.append(_("… and %d more bad lines") % (len(problems) - len(shown)))
        raise DatasetError(shown)
    if not cases:
        raise DatasetError([_("the file has no cases")])
    return cases


@transaction.atomic
def dataset_import(
    dataset: Dataset, text: str, *, replace: bool = False, source: str = Case.Source.FILE
) -> int:
    """Add (or, with `replace`, put instead of the current ones) every case of the file; all or
    nothing. Returns how many were stored."""
    cases = parse_jsonl(text, registry_of(dataset.organisation))
    if replace:
        Case.objects.filter(dataset=dataset).delete()
    start = _next_position(dataset)
    Case.objects.bulk_create(
        Case(organisation_id=dataset.organisation_id, dataset=dataset, position=start + i,
             source=source, **fields)
        for i, fields in enumerate(cases)
    )  # fmt: skip
    return len(cases)


def dataset_export(dataset: Dataset) -> str:
    return "".join(
        json.dumps(case_json(case), ensure_ascii=False) + "\n"
        for case in Case.objects.filter(dataset=dataset).order_by("position", "pk")
    )


def _next_position(dataset: Dataset) -> int:
    last = Case.objects.filter(dataset=dataset).aggregate(n=Max("position"))["n"]
    return (last or 0) + 1


def case_add(dataset: Dataset, data: dict[str, Any], *, source: str) -> Case:
    """One case, checked like an imported line."""
    problems = case_problems(data, registry_of(dataset.organisation))
    if problems:
        raise DatasetError(problems)
    return Case.objects.create(
        organisation_id=dataset.organisation_id, dataset=dataset,
        position=_next_position(dataset), source=source, **case_fields(data),
    )  # fmt: skip


def case_update(case: Case, data: dict[str, Any]) -> Case:
    problems = case_problems(data, registry_of(case.organisation))
    if problems:
        raise DatasetError(problems)
    for key, value in case_fields(data).items():
        setattr(case, key, value)
    case.updated_at = timezone.now()
    case.save()
    return case


def dataset_create(
    organisation: Organisation, *, name: str, agent: Agent | None = None, description: str = ""
) -> Dataset:
    if agent is not None and agent.organisation_id != organisation.pk:
        raise DatasetError([_("no such agent")])
    name = name.strip()
    if not name or len(name) > 80:
        raise DatasetError([_("a dataset needs a name of at most 80 characters")])
    if Dataset.objects.filter(organisation=organisation, name=name).exists():
        raise DatasetError([_("there is already a dataset called %s") % name])
    return Dataset.objects.create(
        organisation=organisation, name=name, description=description,
        kind=Dataset.Kind.AGENT if agent is not None else Dataset.Kind.GOLDEN, agent=agent,
    )  # fmt: skip


# --- the shipped golden set --------------------------------------------------------------------


@functools.cache
def _golden_text() -> str:
    return GOLDEN_PATH.read_text(encoding="utf-8")


def golden_lines() -> list[dict[str, Any]]:
    """The shipped golden set as case fields (the file is ours: every line is valid)."""
    return [case_fields(json.loads(line)) for line in _golden_text().splitlines() if line.strip()]


def golden_install(organisation: Organisation) -> Dataset | None:
    """The organisation's copy of the shipped golden set, once (an existing one is left alone)."""
    if Dataset.objects.filter(organisation=organisation, name=GOLDEN_NAME).exists():
        return None
    try:
        with transaction.atomic():
            dataset = Dataset.objects.create(
                organisation=organisation, name=GOLDEN_NAME, kind=Dataset.Kind.GOLDEN,
                description="Shipped golden set (evaluation/datasets/golden.jsonl)",
                reference_date=GOLDEN_REFERENCE_DATE,
            )  # fmt: skip
            Case.objects.bulk_create(
                Case(organisation=organisation, dataset=dataset, position=i, **fields)
                for i, fields in enumerate(golden_lines(), start=1)
            )
    except IntegrityError:  # another request installed it meanwhile
        return None
    return dataset
