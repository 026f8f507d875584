"""Evaluation runs from the product (V2): a dataset, an engine and an agent-configuration
version, read by the same service as `manage.py evaluate` (evaluation/services.py), as a job.

`run_create` checks what was asked and stores a queued run; the Celery task (evaluation/tasks.py)
calls `run_execute`, which claims it once (queued → running, a conditional update), reads every
case, records its progress on the row and to the organisation's group (evaluation/live.py) as it
goes, and stores the metrics and the per-case rows. A failure is stored with its reason.
"""

from __future__ import annotations

import datetime
import logging
import time
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from agents.models import Agent, AgentVersion
from business.models import Organisation
from copilot.orchestration.engines import EMBEDDED
from copilot.tryout import AgentEdits, _router_with
from evaluation import live
from evaluation.datasets import as_eval_case
from evaluation.models import Case, Dataset, Run
from evaluation.reading import ENGINES
from evaluation.services import Endpoint, EvaluationError, evaluate_cases, model_endpoint
from nlu import Router

logger = logging.getLogger(__name__)

PROGRESS_EVERY_S = 0.25  # at most four progress writes and frames a second


class RunError(Exception):
    """What was asked cannot run; the message says why."""


def run_create(
    *,
    organisation: Organisation,
    user: Any,
    dataset: Dataset,
    engine: str = EMBEDDED,
    agent: Agent | None = None,
    version: int | None = None,
    reference_date: datetime.date | None = None,
) -> Run:
    if dataset.organisation_id != organisation.pk:
        raise RunError(_("No such dataset."))
    if engine not in ENGINES:
        raise RunError(_("Unknown engine %s.") % engine)
    total = Case.objects.filter(dataset=dataset).count()
    if not total:
        raise RunError(_("The dataset has no cases."))
    if agent is not None:
        if agent.organisation_id != organisation.pk:
            raise RunError(_("No such agent."))
        if version is None or not AgentVersion.objects.filter(agent=agent, number=version).exists():
            raise RunError(_("Agent %(agent)s has no version %(v)s.")
                           % {"agent": agent.name, "v": version})  # fmt: skip
    elif version is not None:
        raise RunError(_("A version needs its agent."))
    try:
        model_endpoint(organisation, Endpoint(engine=engine))
    except EvaluationError as exc:
        raise RunError(_("The %s engine needs a model and none is configured.") % engine) from exc
    return Run.objects.create(
        organisation=organisation, dataset=dataset, dataset_name=dataset.name, engine=engine,
        agent=agent, agent_version=version if agent is not None else None,
        reference_date=reference_date or dataset.reference_date or timezone.localdate(),
        total=total, created_by=user if getattr(user, "is_authenticated", False) else None,
    )  # fmt: skip


def _version_router(run: Run) -> Router:
    """The registry with the run's agent as its recorded version says."""
    assert run.agent is not None and run.agent_version is not None
    snapshot = AgentVersion.objects.get(agent=run.agent, number=run.agent_version).snapshot
    edits = AgentEdits(
        name=run.agent.name,
        enabled=bool(snapshot.get("enabled", True)),
        min_confidence=snapshot.get("min_confidence"),
        intents=tuple(
            (str(i["name"]), str(i.get("examples_es", "")), str(i.get("examples_en", "")))
            for i in snapshot.get("intents", [])
        ),
    )
    return _router_with(run.organisation, edits)


@dataclass
class _Progress:
    run: Run
    last: float = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self.last < PROGRESS_EVERY_S:
            return
        self.last = now
        Run.objects.filter(pk=self.run.pk).update(done=done)
        live.tell(self.run.organisation_id, self.run.pk, done, total, Run.Status.RUNNING)


def run_execute(run_id: int) -> str:
    """Run a queued run once; its final status."""
    claimed = Run.objects.filter(pk=run_id, status=Run.Status.QUEUED).update(
        status=Run.Status.RUNNING, started_at=timezone.now()
    )
    if not claimed:
        return "skipped"
    run = Run.objects.select_related("organisation", "dataset", "agent").get(pk=run_id)
    live.tell(run.organisation_id, run.pk, 0, run.total, Run.Status.RUNNING)
    try:
        if run.dataset is None:
            raise RunError(_("The dataset was deleted."))
        cases = [as_eval_case(c) for c in Case.objects.filter(dataset=run.dataset)]
        if not cases:
            raise RunError(_("The dataset has no cases."))
        report = evaluate_cases(
            run.organisation, cases, reference_date=run.reference_date,
            endpoint=Endpoint(engine=run.engine),
            router=(lambda: _version_router(run)) if run.agent_id is not None else None,
            progress=_Progress(run),
        )  # fmt: skip
    except Exception as exc:  # stored with its reason: the page says why
        logger.warning("evaluation run %s failed: %s", run.pk, exc, exc_info=True)
        run.status, run.error = Run.Status.FAILED, str(exc)[:2000] or exc.__class__.__name__
    else:
        metrics = dict(report.metrics)
        metrics.pop("per_case", None)  # the rows hold each case's usage too
        run.metrics, run.rows = metrics, report.rows
        run.status, run.done, run.total = Run.Status.DONE, len(cases), len(cases)
    run.finished_at = timezone.now()
    with transaction.atomic():
        run.save(update_fields=["status", "error", "metrics", "rows", "done", "total",
                                "finished_at"])  # fmt: skip
    live.tell(run.organisation_id, run.pk, run.done, run.total, run.status)
    return str(run.status)


# --- what the pages show -----------------------------------------------------------------------

SUMMARY = (
    ("chain_accuracy", True),
    ("intent_set_accuracy", True),
    ("agent_accuracy", True),
    ("intent_f1", True),
    ("entity_f1", True),
    ("latency_ms_p50", False),
    ("latency_ms_p95", False),
)  # fmt: skip  (metric, higher is better)


def failing_rows(run: Run) -> list[dict[str, Any]]:
    return [row for row in run.rows if not row.get("correct", {}).get("chain", False)]


@dataclass(frozen=True)
class Heat:
    count: int
    share: float  # of its row
    diagonal: bool


def confusion_matrix(run: Run) -> tuple[list[str], list[tuple[str, list[Heat]]]]:
    """Columns (predicted readings) and rows (expected intent, a cell per column)."""
    confusion: dict[str, dict[str, int]] = run.metrics.get("confusion", {})
    columns = sorted({p for row in confusion.values() for p in row} | set(confusion))
    rows = []
    for expected, got in sorted(confusion.items()):
        total = sum(got.values()) or 1
        rows.append(
            (expected, [Heat(got.get(c, 0), got.get(c, 0) / total, c == expected) for c in columns])
        )
    return columns, rows


@dataclass(frozen=True)
class Delta:
    name: str
    a: float
    b: float
    better: bool | None  # None: no change


def _delta(name: str, a: float, b: float, higher_is_better: bool) -> Delta:
    if abs(a - b) < 1e-9:
        return Delta(name, a, b, None)
    return Delta(name, a, b, (b > a) == higher_is_better)


@dataclass(frozen=True)
class Comparison:
    summary: list[Delta]
    per_intent: list[Delta]  # F1 per intent
    fixed: list[dict[str, Any]]  # wrong in A, right in B (B's row)
    broken: list[dict[str, Any]]  # right in A, wrong in B (B's row)


def run_compare(a: Run, b: Run) -> Comparison:
    summary = [_delta(name, float(a.metrics.get(name, 0)), float(b.metrics.get(name, 0)), hib)
               for name, hib in SUMMARY]  # fmt: skip
    cost_a = float(a.metrics.get("model_usage", {}).get("cost_usd", 0))
    cost_b = float(b.metrics.get("model_usage", {}).get("cost_usd", 0))
    summary.append(_delta("cost_usd", cost_a, cost_b, False))
    pa, pb = a.metrics.get("per_intent", {}), b.metrics.get("per_intent", {})
    per_intent = [
        _delta(intent, float(pa.get(intent, {}).get("f1", 0)),
               float(pb.get(intent, {}).get("f1", 0)), True)
        for intent in sorted(set(pa) | set(pb))
    ]  # fmt: skip
    before = {(r["id"], r["input"]): r["correct"]["chain"] for r in a.rows}
    fixed, broken = [], []
    for row in b.rows:
        was = before.get((row["id"], row["input"]))
        if was is False and row["correct"]["chain"]:
            fixed.append(row)
        elif was is True and not row["correct"]["chain"]:
            broken.append(row)
    return Comparison(summary=summary, per_intent=per_intent, fixed=fixed, broken=broken)
