"""Per-agent metrics (D2): figures computed in the database against hand-computed values, the
period in the organisation's timezone, an empty period, a one-run agent, and tenancy."""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents.services import agents_install_defaults
from approvals.models import PendingAction
from business.models import Organisation
from copilot.models import AgentRun
from evaluation import agent_metrics as am
from evaluation.agent_metrics import Period, agent_metrics, period_from
from llm.models import ModelCall
from tests.conftest import Cast

TZ = "America/Argentina/Buenos_Aires"  # UTC−3, no daylight saving
DAY = datetime.date(2026, 11, 20)


def _at(hour: int, minute: int = 0, day: int = 20) -> datetime.datetime:
    """A moment given in UTC."""
    return datetime.datetime(2026, 11, day, hour, minute, tzinfo=datetime.UTC)


def _run(org: Organisation, agent: str, at: datetime.datetime, **fields: Any) -> AgentRun:
    values: dict[str, Any] = {"turn_id": "t-" + agent, "intent": "x", "engine": "embedded"}
    values.update(fields)
    return AgentRun.objects.create(organisation=org, agent=agent, created_at=at, **values)


@pytest.fixture
def seeded(cast: Cast) -> Cast:
    org = cast.org
    agents_install_defaults(organisation=org)
    # scheduling on the 20th (local): four runs that ran and one yield.
    _run(org, "scheduling", _at(12), latency_ms=100, success=True)
    _run(org, "scheduling", _at(13), latency_ms=200, success=True, clarified=True)
    _run(org, "scheduling", _at(14), latency_ms=300, success=False)
    # 02:00 UTC on the 21st is 23:00 on the 20th in Buenos Aires: still the 20th.
    _run(org, "scheduling", _at(2, day=21), latency_ms=400, success=True, engine="llm",
         rerouted_from="customer", source="reroute")  # fmt: skip
    _run(org, "scheduling", _at(15), latency_ms=0, success=False, yielded=True)
    # customer: one run.
    _run(org, "customer", _at(16), latency_ms=120, success=True)
    # 03:30 UTC on the 21st is 00:30 on the 21st locally: outside a period of the 20th only.
    _run(org, "customer", _at(3, 30, day=21), latency_ms=999, success=False)
    # Model calls: two of scheduling's, one of the orchestrator's.
    for agent, model, t_in, t_out, cost in (
        ("scheduling", "gpt-4o-mini", 100, 50, "0.001000"),
        ("scheduling", "gpt-4o", 10, 5, "0.002000"),
        ("", "gpt-4o-mini", 30, 0, "0.000500"),
    ):
        ModelCall.objects.create(
            organisation=org, agent=agent, purpose="agent" if agent else "orchestrator",
            model=model, tokens_in=t_in, tokens_out=t_out, cost=Decimal(cost), created_at=_at(12),
        )  # fmt: skip
    for status in ("approved", "rejected"):
        PendingAction.objects.create(
            organisation=org, agent="scheduling", tool="job_cancel", category="execute",
            summary="x", status=status, created_at=_at(12),
        )  # fmt: skip
    # Another organisation's runs never count.
    _run(cast.other_org, "scheduling", _at(12), latency_ms=5, success=True)
    return cast


def _day_period() -> Period:
    return Period("custom", DAY, DAY, TZ)


def _row(report: am.Report, agent: str) -> am.AgentRow:
    return next(r for r in report.rows if r.agent == agent)


def test_figures_match_hand_computed_values(seeded: Cast) -> None:
    report = agent_metrics(seeded.org, _day_period())

    scheduling = _row(report, "scheduling")
    assert (scheduling.calls, scheduling.ran, scheduling.successes) == (5, 4, 3)
    assert scheduling.success_rate == 0.75
    assert scheduling.yields == 1 and scheduling.reroutes == 1 and scheduling.clarifications == 1
    # [100, 200, 300, 400]: P50 at 1.5 → 250; P95 at 2.85 → 300 + 0.85·100.
    assert scheduling.latency_p50 == pytest.approx(250.0)
    assert scheduling.latency_p95 == pytest.approx(385.0)
    assert (scheduling.tokens_in, scheduling.tokens_out, scheduling.model_calls) == (110, 55, 2)
    assert scheduling.cost == Decimal("0.003")
    assert scheduling.models == {"gpt-4o-mini": 1, "gpt-4o": 1}
    assert scheduling.engines == {"embedded": 4, "llm": 1}
    assert scheduling.approvals_requested == 2
    assert scheduling.approvals == {"approved": 1, "rejected": 1}
    # [100, 250): 100 and 200; [250, 500): 300 and 400.
    assert scheduling.latency_histogram == [0, 0, 2, 2, 0, 0, 0, 0, 0]


def test_an_agent_with_one_run(seeded: Cast) -> None:
    customer = _row(agent_metrics(seeded.org, _day_period()), "customer")

    assert (customer.calls, customer.ran, customer.successes) == (1, 1, 1)
    assert customer.latency_p50 == customer.latency_p95 == 120.0
    # scheduling's run rerouted from customer is customer's misroute.
    assert customer.misroutes == 1


def test_orchestrator_calls_and_totals(seeded: Cast) -> None:
    report = agent_metrics(seeded.org, _day_period())

    orchestrator = _row(report, am.ORCHESTRATOR)
    assert orchestrator.cost == Decimal("0.0005") and orchestrator.calls == 0
    assert report.rows[-1].agent == am.ORCHESTRATOR
    assert report.totals.calls == 6 and report.totals.ran == 5 and report.totals.successes == 4
    assert report.totals.cost == Decimal("0.0035")
    assert report.totals.engines == {"embedded": 5, "llm": 1}


def test_series_by_day_in_the_organisations_timezone(seeded: Cast) -> None:
    period = Period("custom", DAY, DAY + datetime.timedelta(days=1), TZ)

    report = agent_metrics(seeded.org, period)

    assert report.days == ["2026-11-20", "2026-11-21"]
    assert report.calls_by_day["scheduling"] == [5, 0]
    assert report.calls_by_day["customer"] == [1, 1]
    # The 20th: 4 of 5 that ran succeeded; the 21st: 0 of 1.
    assert report.success_by_day == [0.8, 0.0]
    assert report.cost_by_day == [0.0035, 0.0]


def test_a_run_at_local_midnight_belongs_to_the_new_day(cast: Cast) -> None:
    for moment in (_at(2, 59, day=21), _at(3, 0, day=21), _at(3, 0, day=22)):
        _run(cast.org, "general", moment - datetime.timedelta(microseconds=1))
        _run(cast.org, "general", moment)
    period = Period("custom", DAY, DAY + datetime.timedelta(days=1), TZ)

    report = agent_metrics(cast.org, period)

    # 02:59 UTC (twice) and 02:59:59.999999 UTC on the 21st are the 20th; 03:00 UTC the 21st,
    # as is 02:59:59.999999 UTC on the 22nd; 03:00 UTC on the 22nd is outside.
    assert report.calls_by_day["general"] == [3, 2]


def test_days_across_a_clock_change(cast: Cast) -> None:
    # New York leaves daylight saving at 02:00 on Sunday 1 November 2026: that day has 25 hours.
    ny = (
        datetime.timezone(datetime.timedelta(hours=-4)),
        datetime.timezone(datetime.timedelta(hours=-5)),
    )
    moments = [
        datetime.datetime(2026, 10, 31, 23, 59, tzinfo=ny[0]),  # the 31st
        datetime.datetime(2026, 11, 1, 0, 30, tzinfo=ny[0]),  # the 1st
        datetime.datetime(2026, 11, 1, 23, 30, tzinfo=ny[1]),  # the 1st, 24.5 h after its start
        datetime.datetime(2026, 11, 2, 0, 10, tzinfo=ny[1]),  # the 2nd
    ]
    for moment in moments:
        _run(cast.org, "general", moment)
    period = Period("custom", datetime.date(2026, 10, 31), datetime.date(2026, 11, 2),
                    "America/New_York")  # fmt: skip

    assert agent_metrics(cast.org, period).calls_by_day["general"] == [1, 2, 1]


def test_an_empty_period(seeded: Cast) -> None:
    empty = Period("custom", datetime.date(2026, 10, 1), datetime.date(2026, 10, 3), TZ)

    report = agent_metrics(seeded.org, empty)

    assert report.rows == []
    assert report.totals.calls == 0 and report.totals.success_rate is None
    assert report.success_by_day == [None, None, None]
    assert report.cost_by_day == [0.0, 0.0, 0.0]


def test_a_registered_misroute_source_adds_to_the_reroutes(seeded: Cast) -> None:
    def feedback(org: Organisation, start: datetime.datetime, end: datetime.datetime) -> dict:
        assert org == seeded.org and start == _day_period().start and end == _day_period().end
        return {"customer": 2, "fleet": 1}

    am.register_misroute_source(feedback)
    try:
        report = agent_metrics(seeded.org, _day_period())
    finally:
        am.unregister_misroute_source(feedback)

    assert _row(report, "customer").misroutes == 3
    assert _row(report, "fleet").misroutes == 1


def test_periods(cast: Cast) -> None:
    today = datetime.date(2026, 11, 24)
    org = cast.org

    assert period_from({"period": "today"}, org, today)[0].days == [today]
    seven, errors = period_from({}, org, today)
    assert (seven.first_day, seven.last_day, errors) == (datetime.date(2026, 11, 18), today, [])
    assert period_from({"period": "30d"}, org, today)[0].first_day == datetime.date(2026, 10, 26)
    custom, errors = period_from({"period": "custom", "from": "2026-11-01", "to": "2026-11-03"},
                                 org, today)  # fmt: skip
    assert (custom.first_day, custom.last_day, errors) == (
        datetime.date(2026, 11, 1), datetime.date(2026, 11, 3), [])  # fmt: skip
    assert custom.start.isoformat() == "2026-11-01T00:00:00-03:00"
    for bad in ({"from": "ayer", "to": "2026-11-03"}, {"from": "2026-11-05", "to": "2026-11-03"},
                {"from": "2024-01-01", "to": "2026-11-03"}):  # fmt: skip
        fallback, errors = period_from({"period": "custom", **bad}, org, today)
        assert fallback.key == "7d" and len(errors) == 1


def test_the_page_for_a_manager(client: Client, seeded: Cast) -> None:
    client.force_login(seeded.manager)

    response = client.get(
        reverse("agent_metrics"), {"period": "custom", "from": "2026-11-20", "to": "2026-11-20"}
    )

    assert response.status_code == 200
    page = response.content.decode()
    assert 'data-agent="scheduling"' in page and "vendor/chartjs/chart.umd.min.js" in page
    assert response.context["report"].totals.calls == 6
    assert '"calls_by_day"' in page  # the charts' data


def test_the_period_is_written_as_the_reader_writes_dates(client: Client, seeded: Cast) -> None:
    """es-AR: the inputs show and take 20/11/2026 (not the browser's mm/dd/yyyy date picker)."""
    client.force_login(seeded.manager)

    response = client.get(
        reverse("agent_metrics"),
        {"period": "custom", "from": "20/11/2026", "to": "21/11/2026"},
        HTTP_ACCEPT_LANGUAGE="es-ar",
    )

    period = response.context["period"]
    assert (period.key, period.first_day, period.last_day) == (
        "custom", datetime.date(2026, 11, 20), datetime.date(2026, 11, 21))  # fmt: skip
    page = response.content.decode()
    assert 'name="from" placeholder="dd/mm/aaaa" value="20/11/2026"' in page
    assert 'value="21/11/2026"' in page and 'type="date"' not in page
    wrong = client.get(
        reverse("agent_metrics"), {"period": "custom", "from": "11/31/2026", "to": "x"},
        HTTP_ACCEPT_LANGUAGE="es-ar",
    )  # fmt: skip
    assert wrong.context["period"].key == "7d"
    assert "dd/mm/aaaa" in wrong.context["errors"][0]


def test_engines_approvals_and_chart_days_are_in_the_readers_words(
    client: Client, seeded: Cast
) -> None:
    client.force_login(seeded.manager)
    response = client.get(
        reverse("agent_metrics"),
        {"period": "custom", "from": "20/11/2026", "to": "21/11/2026"},
        HTTP_ACCEPT_LANGUAGE="es-ar",
    )
    page = response.content.decode()
    row = page.split('data-agent="scheduling"', 1)[1].split("</tr>", 1)[0]
    assert "Integrado (sin conexión) 4" in row and "Modelo de lenguaje 1" in row
    assert "embedded" not in row and "approved" not in row and "rejected" not in row
    charts = response.context["charts"]
    assert charts["days"] == ["2026-11-20", "2026-11-21"]  # the data stays ISO
    assert charts["day_labels"] == ["20/11/2026", "21/11/2026"]
    assert charts["engine_labels"] == {
        "embedded": "Integrado (sin conexión)", "llm": "Modelo de lenguaje",
    }  # fmt: skip


def test_bad_custom_dates_say_so_and_show_the_last_7_days(client: Client, seeded: Cast) -> None:
    client.force_login(seeded.admin)

    response = client.get(reverse("agent_metrics"), {"period": "custom", "from": "x", "to": "y"})

    assert response.status_code == 200
    assert response.context["period"].key == "7d"
    assert "data-error" in response.content.decode()


def test_operators_may_not_see_metrics(client: Client, seeded: Cast) -> None:
    client.force_login(seeded.operator)
    assert client.get(reverse("agent_metrics")).status_code == 403


def test_outsider_with_staff_permissions_sees_none_of_the_numbers(
    client: Client, seeded: Cast
) -> None:
    seeded.outsider.is_staff = True
    seeded.outsider.save()
    client.force_login(seeded.outsider)
    session = client.session
    session["org_slug"] = "clima-sur"  # asking for the other organisation changes nothing
    session.save()
    query = {"period": "custom", "from": "2026-11-20", "to": "2026-11-21", "org": "clima-sur"}

    response = client.get(reverse("agent_metrics"), query)

    assert response.status_code == 200  # their own organisation's page
    report = response.context["report"]
    assert report.totals.calls == 1  # the one run of their own organisation
    assert report.totals.cost == 0 and report.totals.approvals_requested == 0
    assert 'data-agent="customer"' not in response.content.decode()
    assert response.context["request"].organisation == seeded.other_org


def test_no_login_no_page(client: Client) -> None:
    assert client.get(reverse("agent_metrics")).status_code == 302


def test_the_postgresql_percentile_aggregate_compiles_to_percentile_cont(cast: Cast) -> None:
    query = (
        AgentRun.objects.filter(organisation=cast.org)
        .values("agent")
        .annotate(p95=am.PercentileCont("latency_ms", 0.95))
        .query
    )
    assert "PERCENTILE_CONT(0.95) WITHIN GROUP (ORDER BY" in str(query)
    with pytest.raises(ValueError):
        am.PercentileCont("latency_ms", 1.5)
