"""Per-agent metrics (D2): what each sub-agent did in a period, computed in the database.

Sources: `copilot.AgentRun` (one row per sub-agent run: calls, success, latency, yields, reroutes,
clarifications, engine, A/B arm), `llm.ModelCall` (tokens, cost and the model of every model
call, by agent; the orchestrator's calls have no agent) and `approvals.PendingAction` (what each
agent asked a manager to approve, and what became of it). Every figure is an aggregate query —
grouped counts and sums, a day index (a CASE over the local midnights, so the organisation's
timezone) for the series, conditional counts for the latency histogram — and the latency
percentiles are the database's too: `percentile_cont` on PostgreSQL; elsewhere (SQLite has no
percentile aggregate) an ordered offset query per agent and percentile that walks an index in
latency order to the percentile's position. Nothing loops over the rows in Python.

Definitions (the page says them too):
- calls: every run of the agent, yields included; ran: the calls that were not yields;
- success rate: successful runs / runs that ran (a yield is counted as a yield, not a failure);
- latency P50/P95: over the runs that ran, linear interpolation (percentile_cont's);
- reroutes: runs the agent took over after another agent yielded; misroutes: runs the router
  sent to this agent that it yielded and another agent then took (its reroutes away), plus any
  registered misroute source (operator feedback: `register_misroute_source`).

`agent_metrics(..., runs=...)` measures any subset of the runs (an A/B test's arm): the model
calls and approvals are then those of the same turns.
"""

from __future__ import annotations

import datetime
import math
import zoneinfo
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db import connection
from django.db.models import (
    Aggregate,
    Case,
    Count,
    DateTimeField,
    Expression,
    F,
    FloatField,
    Func,
    IntegerField,
    Q,
    QuerySet,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Substr
from django.utils import formats, timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, pgettext

from agents.models import Agent
from approvals.models import PendingAction
from business.models import Organisation, choice_label
from copilot.models import AgentRun
from llm.models import ModelCall

MAX_DAYS = 366
PERIODS = {
    "today": gettext_lazy("Today"),
    "7d": gettext_lazy("Last 7 days"),
    "30d": gettext_lazy("Last 30 days"),
    "custom": gettext_lazy("Custom"),
}
# Latency histogram edges, in milliseconds: [0, 50), [50, 100) … [10000, ∞).
LATENCY_EDGES = (0, 50, 100, 250, 500, 1000, 2500, 5000, 10000)
ORCHESTRATOR = "orchestrator"  # model calls with no agent: the orchestrator's and failsafe's


# --- the period -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Period:
    key: str
    first_day: datetime.date  # in the organisation's timezone, inclusive
    last_day: datetime.date  # inclusive
    tz: str

    @property
    def start(self) -> datetime.datetime:
        return _midnight(self.first_day, self.tz)

    @property
    def end(self) -> datetime.datetime:  # exclusive
        return _midnight(self.last_day + datetime.timedelta(days=1), self.tz)

    @property
    def days(self) -> list[datetime.date]:
        count = (self.last_day - self.first_day).days + 1
        return [self.first_day + datetime.timedelta(days=i) for i in range(count)]


def _midnight(day: datetime.date, tz: str) -> datetime.datetime:
    return datetime.datetime.combine(day, datetime.time.min, tzinfo=zoneinfo.ZoneInfo(tz))


def organisation_today(organisation: Organisation) -> datetime.date:
    return timezone.localtime(timezone.now(), zoneinfo.ZoneInfo(organisation.timezone)).date()


def period_from(
    params: Mapping[str, str], organisation: Organisation, today: datetime.date | None = None
) -> tuple[Period, list[str]]:
    """The period the page asks for (`period`, and `from`/`to` for a custom one, ISO dates in
    the organisation's timezone); the last 7 days with the reasons when the request is wrong."""
    tz = organisation.timezone
    today = today or organisation_today(organisation)
    key = params.get("period") or "7d"
    errors: list[str] = []
    if key == "today":
        return Period("today", today, today, tz), errors
    if key == "30d":
        return Period("30d", today - datetime.timedelta(days=29), today, tz), errors
    if key == "custom":
        first, last = _day(params.get("from", "")), _day(params.get("to", ""))
        if first is None or last is None:
            errors.append(
                _("Write both dates of a custom period as %(format)s.")
                % {"format": date_placeholder()}
            )
        elif first > last:
            errors.append(_("The period's start is after its end."))
        elif (last - first).days + 1 > MAX_DAYS:
            errors.append(_("A period may span at most %d days.") % MAX_DAYS)
        else:
            return Period("custom", first, last, tz), errors
    elif key != "7d":
        errors.append(_("Unknown period: showing the last 7 days."))
    return Period("7d", today - datetime.timedelta(days=6), today, tz), errors


def _day(text: str) -> datetime.date | None:
    """A day as the reader writes it in the active language (es: 31/12/2026) or as ISO."""
    text = text.strip()
    for pattern in ("%Y-%m-%d", *formats.get_format("DATE_INPUT_FORMATS")):
        try:
            # A day's shape only: no moment, so no zone (the period's days are the organisation's).
            return datetime.datetime.strptime(text, pattern).date()  # noqa: DTZ007
        except ValueError:
            continue
    return None


def date_input(day: datetime.date | None) -> str:
    """A day as the period's inputs show it, in the active language's short date (31/12/2026)."""
    return formats.date_format(day, "SHORT_DATE_FORMAT") if day is not None else ""


def date_placeholder() -> str:
    """The short date's shape for the reader ("dd/mm/aaaa" in es-AR, "mm/dd/yyyy" in en)."""
    letters = {
        "d": pgettext("date shape", "dd"),
        "j": pgettext("date shape", "dd"),
        "m": pgettext("date shape", "mm"),
        "n": pgettext("date shape", "mm"),
        "Y": pgettext("date shape", "yyyy"),
        "y": pgettext("date shape", "yy"),
    }
    return "".join(letters.get(c, c) for c in str(formats.get_format("SHORT_DATE_FORMAT")))


# --- misroute sources (operator feedback plugs in here) -------------------------------------

MisrouteSource = Callable[[Organisation, datetime.datetime, datetime.datetime], dict[str, int]]
_misroute_sources: list[MisrouteSource] = []


def register_misroute_source(source: MisrouteSource) -> None:
    """Add a count of misroutes per agent in [start, end) — e.g. operator feedback saying "this
    should have been …" (V5) — to the reroutes the metrics already count."""
    if source not in _misroute_sources:
        _misroute_sources.append(source)


def unregister_misroute_source(source: MisrouteSource) -> None:
    if source in _misroute_sources:
        _misroute_sources.remove(source)


# --- percentiles ----------------------------------------------------------------------------


class PercentileCont(Aggregate):
    """PostgreSQL's ordered-set aggregate: percentile_cont(p) WITHIN GROUP (ORDER BY expr)."""

    function = "PERCENTILE_CONT"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()

    def __init__(self, expression: Any, fraction: float, **extra: Any) -> None:
        if not 0 <= fraction <= 1:
            raise ValueError("a percentile's fraction is between 0 and 1")
        super().__init__(expression, fraction=repr(float(fraction)), **extra)


class NotIndexed(Func):
    """`+column`: SQLite then cannot use an index for a condition on it (its documented way to
    steer the planner), so the percentile queries walk the latency index rather than the
    period's index followed by a sort."""

    template = "+%(expressions)s"


def percentiles(
    runs: QuerySet[AgentRun],
    period: Period,
    counts: Mapping[str, int],
    fractions: tuple[float, ...] = (0.5, 0.95),
) -> dict[str, list[float | None]]:
    """Latency percentiles per agent of the runs that ran in the period (`runs` is not yet
    narrowed to it); `counts` is each agent's number of them (known from the main aggregate).
    Linear interpolation, as percentile_cont."""
    ran = runs.filter(yielded=False)
    if connection.vendor == "postgresql":
        ran = ran.filter(created_at__gte=period.start, created_at__lt=period.end)
        names = {f"p{i}": PercentileCont("latency_ms", f) for i, f in enumerate(fractions)}
        rows = _dicts(ran.order_by().values("agent").annotate(**names))
        return {
            row["agent"]: [row[f"p{i}"] for i in range(len(fractions))] for row in rows
        }  # fmt: skip
    # Elsewhere (SQLite): per agent and percentile, the two runs around its position, read in
    # latency order from the index (organisation, agent, yielded, latency_ms, created_at) —
    # an index walk up to the position, no sort.
    # (`yielded IN (false)` rather than `NOT yielded`, which an index cannot match on.)
    ran = (
        runs.filter(yielded__in=[False])
        .alias(at=NotIndexed("created_at", output_field=DateTimeField()))
        .filter(at__gte=period.start, at__lt=period.end)
    )
    result: dict[str, list[float | None]] = {}
    for agent, n in counts.items():
        result[agent] = []
        for fraction in fractions:
            if n <= 0:
                result[agent].append(None)
                continue
            position = fraction * (n - 1)
            low = math.floor(position)
            pair = list(
                ran.filter(agent=agent)
                .order_by("latency_ms")
                .values_list("latency_ms", flat=True)[low : low + 2]
            )
            if not pair:
                result[agent].append(None)
                continue
            high = pair[1] if len(pair) > 1 else pair[0]
            result[agent].append(pair[0] + (high - pair[0]) * (position - low))
    return result


def _dicts(rows: Iterable[Any]) -> Iterator[dict[str, Any]]:
    """values() rows as plain dicts (their keys are the query's annotations)."""
    for item in rows:
        yield dict(item)


# --- the report -----------------------------------------------------------------------------


@dataclass
class AgentRow:
    agent: str
    label: str
    calls: int = 0
    ran: int = 0
    successes: int = 0
    yields: int = 0
    reroutes: int = 0
    misroutes: int = 0
    clarifications: int = 0
    latency_p50: float | None = None
    latency_p95: float | None = None
    model_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: Decimal = Decimal(0)
    approvals_requested: int = 0
    approvals: dict[str, int] = field(default_factory=dict)  # status → count
    engines: dict[str, int] = field(default_factory=dict)
    models: dict[str, int] = field(default_factory=dict)  # model → calls
    latency_histogram: list[int] = field(default_factory=list)

    @property
    def success_rate(self) -> float | None:
        return self.successes / self.ran if self.ran else None

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out

    @property
    def approvals_shown(self) -> list[tuple[str, int]]:
        """(status in the reader's language, count): the codes stay in the data."""
        return [(choice_label(PendingAction.Status, c), n) for c, n in self.approvals.items()]

    @property
    def engines_shown(self) -> list[tuple[str, int]]:
        return [(choice_label(Organisation.Engine, c), n) for c, n in self.engines.items()]


@dataclass
class Report:
    period: Period
    rows: list[AgentRow]
    totals: AgentRow
    days: list[str]
    calls_by_day: dict[str, list[int]]  # agent → calls per day
    success_by_day: list[float | None]  # all agents: success rate per day
    cost_by_day: list[float]  # all model calls (USD) per day
    latency_edges: tuple[int, ...] = LATENCY_EDGES

    def chart_data(self) -> dict[str, Any]:
        """What the page's charts draw (plain JSON)."""
        return {
            "days": self.days,
            "calls_by_day": self.calls_by_day,
            "success_by_day": self.success_by_day,
            "cost_by_day": self.cost_by_day,
            "latency_buckets": _bucket_labels(self.latency_edges),
            "latency_histogram": {row.agent: row.latency_histogram for row in self.rows if row.ran},
            "engines": self.totals.engines,
            "engine_labels": {c: choice_label(Organisation.Engine, c) for c in self.totals.engines},
            # The days as the reader writes them (31/12/2026 in es-AR); `days` stays ISO.
            "day_labels": [
                formats.date_format(datetime.date.fromisoformat(day), "SHORT_DATE_FORMAT")
                for day in self.days
            ],
            "models": self.totals.models,
            "agents": {row.agent: row.label for row in self.rows},
        }


def _bucket_labels(edges: tuple[int, ...]) -> list[str]:
    labels = [f"{low}–{high} ms" for low, high in zip(edges, edges[1:], strict=False)]
    return [*labels, f"≥ {edges[-1]} ms"]


def _histogram_counts() -> dict[str, Count]:
    counts = {}
    for i, low in enumerate(LATENCY_EDGES):
        bounds = Q(latency_ms__gte=low)
        if i + 1 < len(LATENCY_EDGES):
            bounds &= Q(latency_ms__lt=LATENCY_EDGES[i + 1])
        counts[f"h{i}"] = Count("pk", filter=bounds & Q(yielded=False))
    return counts


def agent_metrics(
    organisation: Organisation,
    period: Period,
    *,
    runs: QuerySet[AgentRun] | None = None,
    language: str = "es",
) -> Report:
    """Every agent's figures in the period. `runs` narrows the runs measured (always within the
    organisation and the period); model calls and approvals follow the same turns then."""
    base = AgentRun.objects.filter(organisation=organisation)
    narrowed = runs is not None
    if runs is not None:
        base = base.filter(pk__in=runs.filter(organisation=organisation).values("pk"))
    base = base.order_by()
    scoped = base.filter(created_at__gte=period.start, created_at__lt=period.end)
    labels = {
        a.name: a.label(language)
        for a in Agent.objects.filter(organisation=organisation).only(
            "name", "label_es", "label_en"
        )
    }
    rows: dict[str, AgentRow] = {}

    def row(agent: str) -> AgentRow:
        if agent not in rows:
            label = labels.get(agent) or (_("Orchestrator") if agent == ORCHESTRATOR else agent)
            rows[agent] = AgentRow(agent=agent, label=str(label))
        return rows[agent]

    # One scan of the period's runs: grouped by agent, engine, the agent a reroute came from and
    # the local day (a few thousand groups at most), every count conditional; the groups are
    # summed per agent and per day below.
    grouped = scoped.values("agent", "engine", "rerouted_from", day=day_index(period)).annotate(
        calls=Count("pk"),
        ran=Count("pk", filter=Q(yielded=False)),
        successes=Count("pk", filter=Q(yielded=False, success=True)),
        yields=Count("pk", filter=Q(yielded=True)),
        clarifications=Count("pk", filter=Q(clarified=True)),
        **_histogram_counts(),
    )
    days = [day.isoformat() for day in period.days]
    calls_by_day: dict[str, list[int]] = {}
    ran_by_day, ok_by_day = [0] * len(days), [0] * len(days)
    for item in _dicts(grouped):
        r = row(item["agent"])
        if 0 <= item["day"] < len(days):
            series = calls_by_day.setdefault(item["agent"], [0] * len(days))
            series[item["day"]] += item["calls"]
            ran_by_day[item["day"]] += item["ran"]
            ok_by_day[item["day"]] += item["successes"]
        r.calls += item["calls"]
        r.ran += item["ran"]
        r.successes += item["successes"]
        r.yields += item["yields"]
        r.clarifications += item["clarifications"]
        if item["rerouted_from"]:
            r.reroutes += item["calls"]
            row(item["rerouted_from"]).misroutes += item["calls"]
        engine = item["engine"] or "unknown"
        r.engines[engine] = r.engines.get(engine, 0) + item["calls"]
        histogram = [item[f"h{i}"] for i in range(len(LATENCY_EDGES))]
        r.latency_histogram = [
            a + b
            for a, b in zip(r.latency_histogram or [0] * len(histogram), histogram, strict=True)
        ]
    if not narrowed:
        for source in _misroute_sources:
            for agent, n in source(organisation, period.start, period.end).items():
                row(agent).misroutes += int(n)
    for agent, (p50, p95) in percentiles(base, period, {a: r.ran for a, r in rows.items()}).items():
        row(agent).latency_p50, row(agent).latency_p95 = p50, p95

    calls = ModelCall.objects.filter(
        organisation=organisation, created_at__gte=period.start, created_at__lt=period.end
    ).order_by()
    actions = PendingAction.objects.filter(
        organisation=organisation, created_at__gte=period.start, created_at__lt=period.end
    ).order_by()
    if narrowed:
        turns = scoped.values("turn_id")
        calls = calls.filter(turn_id__in=turns, agent__in=scoped.values("agent"))
        actions = actions.filter(turn_id__in=turns)
    for item in _dicts(
        calls.values("agent", "model").annotate(
            n=Count("pk"),
            tokens_in=Sum("tokens_in"),
            tokens_out=Sum("tokens_out"),
            cost=Sum("cost"),
        )
    ):
        r = row(item["agent"] or ORCHESTRATOR)
        r.model_calls += item["n"]
        r.tokens_in += item["tokens_in"] or 0
        r.tokens_out += item["tokens_out"] or 0
        r.cost += item["cost"] or Decimal(0)
        r.models[item["model"]] = r.models.get(item["model"], 0) + item["n"]
    for item in _dicts(actions.values("agent", "status").annotate(n=Count("pk"))):
        r = row(item["agent"])
        r.approvals_requested += item["n"]
        r.approvals[item["status"]] = r.approvals.get(item["status"], 0) + item["n"]

    ordered = sorted(rows.values(), key=lambda r: (r.agent == ORCHESTRATOR, -r.calls, r.agent))
    success_by_day = [
        round(ok / ran, 4) if ran else None for ok, ran in zip(ok_by_day, ran_by_day, strict=True)
    ]
    cost_by_day = _cost_series(calls, period)
    return Report(
        period=period,
        rows=ordered,
        totals=_totals(ordered),
        days=days,
        calls_by_day=calls_by_day,
        success_by_day=success_by_day,
        cost_by_day=cost_by_day,
    )


class EpochDayIndex(Func):
    """SQLite: (strftime('%s', column's whole seconds) − start) / 86400 in integers, the whole
    days since `start`. Stored datetimes are UTC text; dropping the fraction of a second never
    crosses a midnight (midnights are whole seconds), so an instant's day is exact."""

    template = "((CAST(%(expressions)s AS INTEGER) - %(start)s) / 86400)"
    output_field = IntegerField()

    def __init__(self, column: str, *, start: datetime.datetime) -> None:
        # strftime('%s', substr(column, 1, 19)): SQLite rounds a fraction of a second to the
        # millisecond when it parses one (…59.9999 would become the next second), so the
        # fraction is cut off before it is read.
        seconds = Func(Value("%s"), Substr(F(column), 1, 19), function="strftime")
        super().__init__(seconds, start=str(int(start.timestamp())))


def day_index(period: Period, column: str = "created_at") -> Expression:
    """The local day (0, 1, …) of `column` within the period, computed by the database: a CASE
    over the UTC instants of the period's local midnights (exact across daylight-saving
    changes), or on SQLite, when the period has no clock change, the day count in seconds.
    (SQLite's TruncDay with a timezone calls back into Python for every row, which was most of
    the page's time on 100k runs.)"""
    days = period.days
    bounds = [_midnight(day + datetime.timedelta(days=1), period.tz) for day in days]
    offsets = {(bound.utcoffset(), period.start.utcoffset()) for bound in bounds}
    if connection.vendor == "sqlite" and all(a == b for a, b in offsets):
        # No clock change in the period: whole days since the first local midnight, in C.
        return EpochDayIndex(column, start=period.start)
    return Case(
        *[When(**{f"{column}__lt": bound}, then=Value(i)) for i, bound in enumerate(bounds)],
        default=Value(-1),
        output_field=IntegerField(),
    )


def _cost_series(calls: QuerySet[ModelCall], period: Period) -> list[float]:
    cost = [0.0] * len(period.days)
    for item in calls.annotate(day=day_index(period)).values("day").annotate(c=Sum("cost")):
        if 0 <= item["day"] < len(cost):
            cost[item["day"]] += float(item["c"] or 0)
    return [round(c, 6) for c in cost]


def _totals(rows: list[AgentRow]) -> AgentRow:
    total = AgentRow(agent="", label=str(_("All agents")))
    for r in rows:
        for key in (
            "calls", "ran", "successes", "yields", "reroutes", "misroutes", "clarifications",
            "model_calls", "tokens_in", "tokens_out", "approvals_requested",
        ):  # fmt: skip
            setattr(total, key, getattr(total, key) + getattr(r, key))
        total.cost += r.cost
        for target, source in (
            (total.approvals, r.approvals),
            (total.engines, r.engines),
            (total.models, r.models),
        ):
            for key, n in source.items():
                target[key] = target.get(key, 0) + n
    return total
