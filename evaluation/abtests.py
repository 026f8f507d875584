"""A/B tests measured (V4): each arm offline on a dataset, online on its live conversations, and
whether the difference in success rate is significant.

- Offline: the evaluation service's own pieces (`load_cases`, `Reader`, `predict`,
  `compute_metrics`, as `manage.py evaluate` uses them) run once per arm, on the embedded engine,
  with the router trained on the organisation's registry where the tested agent has that arm's
  intents and settings. Nothing is written but the results on the test.
- Online: the per-agent metrics (evaluation/agent_metrics.py) of the runs recorded under each arm.
- Significance: a two-proportion z-test on the success rates (pooled standard error, two-sided p
  from the normal distribution through `math.erfc`; no statistics package needed).
"""

from __future__ import annotations

import datetime
import math
import zoneinfo
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext as _

from agents.abtest import arm_version, configured
from agents.models import ABTest
from copilot.models import AgentRun
from copilot.router_cache import router_with_intents, vocabulary_for
from evaluation.agent_metrics import AgentRow, Period, agent_metrics, organisation_today
from evaluation.metrics import compute_metrics
from evaluation.reading import Reader
from evaluation.services import EvaluationError, load_cases, predict, reference_context

DATASETS_DIR = Path(__file__).resolve().parent / "datasets"
SHIPPED_DATASETS = {"golden": DATASETS_DIR / "golden.jsonl"}
# The offline metrics kept on the test and shown side by side.
OFFLINE_KEYS = (
    "cases",
    "chain_accuracy",
    "intent_set_accuracy",
    "agent_accuracy",
    "intent_f1",
    "entity_f1",
    "latency_ms_p50",
    "latency_ms_p95",
)


# --- significance ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ZTest:
    rate_a: float
    rate_b: float
    z: float
    p_value: float

    @property
    def difference(self) -> float:
        return self.rate_b - self.rate_a

    def significant(self, alpha: float = 0.05) -> bool:
        return self.p_value < alpha


def two_proportion_z_test(successes_a: int, n_a: int, successes_b: int, n_b: int) -> ZTest | None:
    """z = (p_b − p_a) / √(p̂(1 − p̂)(1/n_a + 1/n_b)), p̂ the pooled rate; two-sided p-value
    = erfc(|z| / √2). None when an arm has no runs (no test possible); z = 0, p = 1 when both
    rates are 0 or 1 (no variance: no evidence of a difference)."""
    if n_a <= 0 or n_b <= 0:
        return None
    if not (0 <= successes_a <= n_a and 0 <= successes_b <= n_b):
        raise ValueError("successes must be between 0 and the number of trials")
    rate_a, rate_b = successes_a / n_a, successes_b / n_b
    pooled = (successes_a + successes_b) / (n_a + n_b)
    variance = pooled * (1 - pooled) * (1 / n_a + 1 / n_b)
    if variance <= 0:
        return ZTest(rate_a, rate_b, 0.0, 1.0)
    z = (rate_b - rate_a) / math.sqrt(variance)
    return ZTest(rate_a, rate_b, z, math.erfc(abs(z) / math.sqrt(2)))


# --- online ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArmResult:
    arm: str
    version: int
    row: AgentRow  # the tested agent's figures under this arm
    conversations: int


@dataclass(frozen=True)
class Online:
    period: Period
    a: ArmResult
    b: ArmResult
    z_test: ZTest | None


def test_period(test: ABTest) -> Period:
    tz = test.organisation.timezone
    zone = zoneinfo.ZoneInfo(tz)
    first = timezone.localtime(test.created_at, zone).date()
    last = (
        timezone.localtime(test.stopped_at, zone).date()
        if test.stopped_at is not None
        else organisation_today(test.organisation)
    )
    return Period("custom", first, max(first, last), tz)


def online_results(test: ABTest, *, language: str = "es") -> Online:
    period = test_period(test)
    arms: dict[str, ArmResult] = {}
    for arm in (ABTest.Arm.A, ABTest.Arm.B):
        runs = AgentRun.objects.filter(
            organisation=test.organisation, abtest_id=test.pk, abtest_arm=arm, agent=test.agent.name
        )
        report = agent_metrics(test.organisation, period, runs=runs, language=language)
        row = next(
            (r for r in report.rows if r.agent == test.agent.name),
            AgentRow(agent=test.agent.name, label=test.agent.label(language)),
        )
        conversations = runs.exclude(conversation=None).values("conversation").distinct().count()
        arms[arm] = ArmResult(arm, arm_version(test, arm).number, row, conversations)
    a, b = arms[ABTest.Arm.A], arms[ABTest.Arm.B]
    z = two_proportion_z_test(a.row.successes, a.row.ran, b.row.successes, b.row.ran)
    return Online(period=period, a=a, b=b, z_test=z)


# --- offline --------------------------------------------------------------------------------


def offline_compare(
    test: ABTest, path: Path, *, reference_date: datetime.date | None = None, dataset: str = ""
) -> dict[str, Any]:
    """Both arms on the dataset at `path` (EvaluationError on a bad file); the results are
    stored on the test and returned: {"dataset", "reference_date", "a": {...}, "b": {...}}."""
    cases = load_cases(path)
    organisation = test.organisation
    day = reference_date or organisation_today(organisation)
    context = reference_context(organisation.timezone, day, vocabulary_for(organisation))
    results: dict[str, Any] = {
        "dataset": dataset or path.name,
        "reference_date": day.isoformat(),
        "ran_at": timezone.now().isoformat(),
    }
    for arm in (ABTest.Arm.A, ABTest.Arm.B):
        snapshot = arm_version(test, arm).snapshot
        try:
            router = router_with_intents(
                organisation, {test.agent.name: list(snapshot.get("intents", []))}
            )
        except ValueError as exc:  # the arm leaves too few intents to train on
            message = _("Arm %(arm)s: %(error)s") % {"arm": arm.upper(), "error": exc}
            raise EvaluationError(message) from exc
        reader = Reader.open(organisation, router, context, "embedded", None)
        if test.agent.name in reader.agents:
            reader.agents[test.agent.name] = configured(reader.agents[test.agent.name], snapshot)
        predictions = predict(reader, cases)
        metrics = compute_metrics(cases, predictions, dict(router.intents))
        results[arm] = {key: metrics.get(key) for key in OFFLINE_KEYS}
        results[arm]["version"] = arm_version(test, arm).number
    ABTest.objects.filter(pk=test.pk).update(offline=results)
    test.offline = results
    return results
