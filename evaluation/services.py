"""Run the router over an evaluation file (V2's command line).

Three ways to get the router under test: an organisation's own (`--org`), the shipped default
registry in a throwaway organisation, or a throwaway organisation whose agents are built from a
training file (`--train`, one agent per intent) — the last compares the router with the public
multi-intent benchmarks. Throwaway organisations live inside a transaction that is rolled back.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import time
import zoneinfo
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils.text import slugify

from agents.models import Agent, AgentIntent
from agents.services import agents_install_defaults
from business.models import Organisation
from copilot.router_cache import router_for, vocabulary_for
from evaluation.metrics import Case, Prediction, case_from_json, compute_metrics
from nlu import Context, Example, Router, Vocabulary, build_router
from nlu.training import examples_from_labelled


class EvaluationError(Exception):
    """A problem with the evaluation's input that the user can fix."""


def load_cases(path: Path) -> list[Case]:
    if not path.exists():
        raise EvaluationError(f"{path}: no such file")
    cases: list[Case] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                cases.append(case_from_json(json.loads(line)))
            except (ValueError, AttributeError) as exc:
                raise EvaluationError(f"{path}:{number}: {exc}") from exc
    if not cases:
        raise EvaluationError(f"{path}: no cases")
    return cases


def predict(router: Router, cases: list[Case], ctx: Context) -> list[Prediction]:
    predictions = []
    for case in cases:
        started = time.perf_counter()
        understanding = router.understand(case.input, ctx)
        elapsed = (time.perf_counter() - started) * 1000
        predictions.append(
            Prediction(
                intents=[task.intent for task in understanding.tasks],
                agents=[task.agent for task in understanding.tasks],
                entities=understanding.entities.as_eval_dict(),
                latency_ms=elapsed,
            )
        )
    return predictions


def reference_context(tz: str, day: datetime.date, vocabulary: Vocabulary) -> Context:
    # Noon on the reference day: "hoy"/"today" is that day whatever the hour of the run.
    now = datetime.datetime.combine(day, datetime.time(12, 0), tzinfo=zoneinfo.ZoneInfo(tz))
    return Context(today=day, now=now, tz=tz, vocabulary=vocabulary)


def _router_for_org(organisation: Organisation) -> Router:
    return router_for(organisation)


def _training_agents(organisation: Organisation, train_path: Path) -> None:
    """One agent per intent of the training file; multi-intent lines are cut into examples."""
    lines = [(case.input, case.expected_intents) for case in load_cases(train_path)]
    by_intent: dict[str, list[str]] = defaultdict(list)
    for example in examples_from_labelled(lines, lambda intent: intent):
        by_intent[example.intent].append(" ".join(example.text.split()))
    if len(by_intent) < 2:
        raise EvaluationError(f"{train_path}: needs single-intent lines of at least two intents")
    for number, (intent, texts) in enumerate(sorted(by_intent.items()), start=1):
        agent = Agent.objects.create(
            organisation=organisation,
            name=f"{slugify(intent)[:30] or 'intent'}-{number}",
            label_es=intent[:80],
            label_en=intent[:80],
            category="evaluation",
            description=f"Evaluation agent for {intent}",
        )
        AgentIntent.objects.create(agent=agent, name=intent, examples_en="\n".join(texts))


@contextlib.contextmanager
def throwaway_organisation(train_path: Path | None) -> Iterator[Organisation]:
    with transaction.atomic():
        organisation = Organisation.objects.create(
            name="Evaluation", slug=f"evaluation-{time.time_ns()}"
        )
        if train_path is None:
            agents_install_defaults(organisation=organisation)
        else:
            _training_agents(organisation, train_path)
        try:
            yield organisation
        finally:
            transaction.set_rollback(True)


def evaluate_file(
    path: Path,
    *,
    reference_date: datetime.date,
    org_slug: str | None = None,
    train_path: Path | None = None,
) -> dict[str, Any]:
    cases = load_cases(path)
    if org_slug:
        organisation = Organisation.objects.filter(slug=org_slug).first()
        if organisation is None:
            raise EvaluationError(f"no organisation with slug {org_slug!r}")
        return _run(organisation, cases, reference_date, vocabulary_for(organisation))
    with throwaway_organisation(train_path) as organisation:
        return _run(organisation, cases, reference_date, Vocabulary())


def _run(
    organisation: Organisation,
    cases: list[Case],
    reference_date: datetime.date,
    vocabulary: Vocabulary,
) -> dict[str, Any]:
    started = time.perf_counter()
    router = _router_for_org(organisation)
    train_s = time.perf_counter() - started
    ctx = reference_context(organisation.timezone, reference_date, vocabulary)
    metrics = compute_metrics(cases, predict(router, cases, ctx), dict(router.intents))
    metrics["train_seconds"] = round(train_s, 3)
    metrics["reference_date"] = reference_date.isoformat()
    return metrics


__all__ = ["EvaluationError", "Example", "build_router", "evaluate_file", "load_cases"]
