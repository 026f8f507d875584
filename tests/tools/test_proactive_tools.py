"""Proactive tools on real rows: maintenance due, follow-ups and the seasonal campaign."""

from __future__ import annotations

import datetime

import pytest

from agents.context import TurnContext
from business import services
from tests import factories
from tests.tools.conftest import BA, MONDAY, NOW, Shop, at, run

pytestmark = pytest.mark.django_db


def test_maintenance_due_list_most_overdue_first(ctx: TurnContext, shop: Shop) -> None:
    org = ctx.organisation
    late = factories.make_equipment(org, shop.juan, last_service_on=datetime.date(2025, 9, 10))
    soon = factories.make_equipment(org, shop.maria, last_service_on=datetime.date(2025, 12, 10))
    factories.make_equipment(org, shop.maria, last_service_on=datetime.date(2026, 6, 1))
    result = run(ctx, "maintenance_due_list")
    assert result.ok, result.error
    rows = result.data["equipment"]
    assert [r["id"] for r in rows] == [late.pk, soon.pk]
    assert rows[0]["days_overdue"] == 74  # due 2025-09-10 + 12 months
    assert rows[0]["customer"]["name"] == "Juan Pérez"
    assert rows[1]["days_overdue"] < 0  # due within the next 30 days
    assert result.summary == "2 due, 1 overdue"
    assert run(ctx, "maintenance_due_list", within_days=0).data["total"] == 1


def test_maintenance_due_list_rejects_a_silly_window(ctx: TurnContext) -> None:
    assert not run(ctx, "maintenance_due_list", within_days=-1).ok


def test_follow_up_list_lists_finished_jobs_not_yet_followed_up(
    ctx: TurnContext, shop: Shop
) -> None:
    org = ctx.organisation
    last_week = at(MONDAY - datetime.timedelta(days=7), 10)
    pending = factories.make_job(
        org, shop.juan, last_week, status="done", completed_at=last_week, technician=shop.carlos
    )
    called = factories.make_job(org, shop.maria, last_week, status="done", completed_at=last_week)
    services.job_follow_up_record(organisation=org, job=called, note="Todo bien")
    long_ago = at(MONDAY - datetime.timedelta(days=40), 10)
    factories.make_job(org, shop.maria, long_ago, status="done", completed_at=long_ago)
    result = run(ctx, "follow_up_list")
    assert [j["job_id"] for j in result.data["jobs"]] == [pending.pk]
    assert result.data["jobs"][0]["technician"] == "Carlos Gómez"
    assert result.data["jobs"][0]["completed_at"] == "2026-11-16T10:00-03:00"
    assert run(ctx, "follow_up_list", days=60).data["total"] == 2


def test_seasonal_targets_in_spring_is_the_ac_campaign(ctx: TurnContext, shop: Shop) -> None:
    org = ctx.organisation
    never = factories.make_equipment(org, shop.juan, skill="ac")
    stale = factories.make_equipment(
        org, shop.maria, skill="ac", last_service_on=datetime.date(2025, 10, 1)
    )
    factories.make_equipment(org, shop.maria, skill="ac", last_service_on=datetime.date(2026, 9, 1))
    factories.make_equipment(org, shop.juan, kind="Caldera", skill="heating")
    result = run(ctx, "seasonal_targets")
    assert result.ok
    assert result.data["campaign"] == "summer_ac"
    assert result.data["season"] == "spring"
    assert [e["id"] for e in result.data["equipment"]] == [never.pk, stale.pk]
    assert result.data["equipment"][0]["never_serviced"] is True


def test_seasonal_targets_follow_the_organisations_today(ctx: TurnContext, shop: Shop) -> None:
    factories.make_equipment(ctx.organisation, shop.juan, kind="Caldera", skill="heating")
    april = TurnContext(ctx.organisation, None, None, datetime.datetime(2027, 4, 5, 9, tzinfo=BA))
    result = run(april, "seasonal_targets")
    assert (result.data["campaign"], result.data["season"]) == ("winter_heating", "autumn")
    assert result.data["total"] == 1
    july = TurnContext(ctx.organisation, None, None, NOW.replace(year=2027, month=7))
    assert run(july, "seasonal_targets").data == {
        **run(july, "seasonal_targets").data,
        "campaign": None,
        "season": "winter",
        "total": 0,
    }


def test_the_outsider_sees_none_of_the_first_organisations_targets(
    ctx: TurnContext, outsider_ctx: TurnContext, shop: Shop
) -> None:
    org = ctx.organisation
    factories.make_equipment(org, shop.juan, last_service_on=datetime.date(2025, 1, 1))
    done = at(MONDAY - datetime.timedelta(days=2), 10)
    factories.make_job(org, shop.juan, done, status="done", completed_at=done)
    assert run(ctx, "maintenance_due_list").data["total"] == 1
    assert run(outsider_ctx, "maintenance_due_list").data["total"] == 0
    assert run(outsider_ctx, "follow_up_list").data["total"] == 0
    assert run(outsider_ctx, "seasonal_targets").data["total"] == 0


def test_follow_up_record_takes_the_job_off_the_follow_up_list(
    ctx: TurnContext, outsider_ctx: TurnContext, shop: Shop
) -> None:
    last_week = at(MONDAY - datetime.timedelta(days=7), 10)
    job = factories.make_job(ctx.organisation, shop.juan, last_week, status="done",
                             completed_at=last_week)  # fmt: skip
    assert run(ctx, "follow_up_list").data["total"] == 1
    assert not run(outsider_ctx, "follow_up_record", job_id=job.pk, note="x").ok
    result = run(ctx, "follow_up_record", job_id=job.pk, note="Conforme")
    assert result.ok, result.error
    assert run(ctx, "follow_up_list").data["total"] == 0
