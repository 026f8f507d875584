"""Run an engine over an evaluation file (V2's command line).

The engine (`embedded`, `llm`, `hybrid`: evaluation/reading.py) reads each case as a turn would;
the model engines ask the organisation's endpoint (its provider settings, else the environment),
or one given on the command line. Three ways to get the router under test: an organisation's own
(`--org`), the shipped default registry in a throwaway organisation, or a throwaway organisation
whose agents are built from a training file (`--train`, one agent per intent) — the last compares
the router with the public multi-intent benchmarks. Throwaway organisations live inside a
transaction that is rolled back, their model-call rows with them; with `--org` the rows stay (real
calls on its key, under `eval-…` turn ids).
"""

from __future__ import annotations

import contextlib
import datetime
import time
import zoneinfo
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils.text import slugify

from agents.models import Agent, AgentIntent
from agents.services import agents_install_defaults
from business.models import Organisation
from copilot.orchestration.engines import EMBEDDED
from copilot.router_cache import router_for, vocabulary_for
from evaluation import jsonlines
from evaluation.metrics import (
    Case,
    Prediction,
    case_from_json,
    case_row,
    compute_metrics,
    usage_row,
    usage_summary,
)
from evaluation.reading import ENGINES, Reader, read_case
from llm.provider import Provider, provider_overridden
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
                case = case_from_json(jsonlines.loads(line))
            except (ValueError, AttributeError) as exc:
                raise EvaluationError(f"{path}:{number}: {exc}") from exc
            case.id = case.id or str(number)
            cases.append(case)
    if not cases:
        raise EvaluationError(f"{path}: no cases")
    return cases


Progress = Callable[[int, int], None]  # (cases read, cases in all)


def predict(
    reader: Reader, cases: list[Case], progress: Progress | None = None
) -> list[Prediction]:
    predictions: list[Prediction] = []
    for number, case in enumerate(cases, start=1):
        predictions.append(read_case(reader, case, number))
        if progress is not None:
            progress(number, len(cases))
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


@dataclass(frozen=True)
class Endpoint:
    """`--engine` and the command line's overrides of the configured model endpoint."""

    engine: str = EMBEDDED
    base_url: str = ""
    api_key: str = ""
    model: str = ""


@dataclass
class Report:
    metrics: dict[str, Any]  # what `--json` prints
    rows: list[dict[str, Any]]  # one per case, for `--per-case`


def evaluate_file(
    path: Path,
    *,
    reference_date: datetime.date,
    org_slug: str | None = None,
    train_path: Path | None = None,
    endpoint: Endpoint | None = None,
) -> Report:
    endpoint = endpoint or Endpoint()
    if endpoint.engine not in ENGINES:
        raise EvaluationError(f"unknown engine {endpoint.engine!r}: one of {', '.join(ENGINES)}")
    cases = load_cases(path)
    if org_slug:
        organisation = Organisation.objects.filter(slug=org_slug).first()
        if organisation is None:
            raise EvaluationError(f"no organisation with slug {org_slug!r}")
        return evaluate_cases(organisation, cases, reference_date=reference_date, endpoint=endpoint)
    with throwaway_organisation(train_path) as organisation:
        return evaluate_cases(
            organisation, cases, reference_date=reference_date, endpoint=endpoint,
            vocabulary=Vocabulary(),
        )  # fmt: skip


def model_endpoint(organisation: Organisation, endpoint: Endpoint) -> Provider | None:
    """The provider the model engines ask; None on embedded. A clear error when there is none."""
    if endpoint.engine == EMBEDDED:
        return None
    try:
        provider = provider_overridden(
            organisation, base_url=endpoint.base_url, api_key=endpoint.api_key,
            model=endpoint.model,
        )  # fmt: skip
    except ValueError as exc:
        message = f"--base-url needs --api-key ({exc}; any key for a local server)"
        raise EvaluationError(message) from exc
    if provider is None:
        raise EvaluationError(
            f"--engine {endpoint.engine} needs a model and none is configured: set OPENAI_API_KEY "
            "(and OPENAI_BASE_URL, OPENAI_MODEL), the organisation's provider settings, or pass "
            "--api-key with --base-url"
        )
    return provider


def evaluate_cases(
    organisation: Organisation,
    cases: list[Case],
    *,
    reference_date: datetime.date,
    endpoint: Endpoint | None = None,
    vocabulary: Vocabulary | None = None,
    router: Callable[[], Router] | None = None,
    progress: Progress | None = None,
) -> Report:
    """The one evaluation: `manage.py evaluate` and the runs of the evaluation pages both come
    here. `router` builds another router than the organisation's (an agent at an earlier
    version); `vocabulary` defaults to the organisation's names; `progress` hears each case."""
    endpoint = endpoint or Endpoint()
    if endpoint.engine not in ENGINES:
        raise EvaluationError(f"unknown engine {endpoint.engine!r}: one of {', '.join(ENGINES)}")
    if not cases:
        raise EvaluationError("no cases")
    provider = model_endpoint(organisation, endpoint)
    if vocabulary is None:
        vocabulary = vocabulary_for(organisation)
    started = time.perf_counter()
    trained = router() if router is not None else _router_for_org(organisation)
    train_s = time.perf_counter() - started
    ctx = reference_context(organisation.timezone, reference_date, vocabulary)
    reader = Reader.open(organisation, trained, ctx, endpoint.engine, provider)
    predictions = predict(reader, cases, progress)
    intent_agent = dict(trained.intents)
    metrics = compute_metrics(cases, predictions, intent_agent)
    metrics["train_seconds"] = round(train_s, 3)
    metrics["reference_date"] = reference_date.isoformat()
    metrics["engine"] = endpoint.engine
    metrics["endpoint"] = repr(provider) if provider is not None else ""
    metrics["model_usage"] = usage_summary(predictions)
    metrics["per_case"] = [
        {"id": case.id, **usage_row(pred), "chain_ok": pred.intents == case.expected_intents}
        for case, pred in zip(cases, predictions, strict=True)
    ]
    rows = [case_row(c, p, intent_agent) for c, p in zip(cases, predictions, strict=True)]
    return Report(metrics=metrics, rows=rows)


__all__ = ["Endpoint", "EvaluationError", "Example", "Report", "build_router", "evaluate_cases",
           "evaluate_file", "load_cases"]  # fmt: skip
