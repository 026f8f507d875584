"""Escalation tickets and the general agent's company information."""

from __future__ import annotations

import datetime
import json

import pytest

from agents.context import TurnContext
from agents.general.tools import DayHours, OrgInfo
from business.models import EscalationTicket
from tests import factories
from tests.tools.conftest import BA, MONDAY, Shop, at, run

pytestmark = pytest.mark.django_db


def test_ticket_create_takes_its_priority_from_the_reason(ctx: TurnContext, shop: Shop) -> None:
    job = factories.make_job(ctx.organisation, shop.juan, at(MONDAY, 9))
    result = run(
        ctx, "ticket_create", reason="emergency", summary="Olor a gas en la cocina", job_id=job.pk
    )
    assert result.ok, result.error
    ticket = EscalationTicket.objects.get(pk=result.data["ticket"]["id"])
    assert ticket.organisation == ctx.organisation
    assert ticket.priority == "urgent"
    assert ticket.customer == shop.juan  # taken from the job
    assert ticket.created_by == ctx.user
    assert result.summary == f"ticket #{ticket.pk} opened (urgent)"


def test_ticket_create_with_an_explicit_priority_and_customer_name(
    ctx: TurnContext, shop: Shop
) -> None:
    result = run(
        ctx,
        "ticket_create",
        reason="complaint",
        summary="El técnico llegó tarde",
        priority="low",
        customer="María González",
    )
    assert result.data["ticket"]["priority"] == "low"
    assert result.data["ticket"]["customer_id"] == shop.maria.pk


def test_ticket_create_validates_reason_and_summary(ctx: TurnContext) -> None:
    bad_reason = run(ctx, "ticket_create", reason="boredom", summary="x")
    assert not bad_reason.ok
    assert "argument 'reason' must be one of" in bad_reason.error
    no_summary = run(ctx, "ticket_create", reason="escalate", summary="  ")
    assert not no_summary.ok
    assert EscalationTicket.objects.count() == 0


def test_ticket_create_never_links_another_organisations_rows(
    outsider_ctx: TurnContext, shop: Shop
) -> None:
    job = factories.make_job(shop.juan.organisation, shop.juan, at(MONDAY, 9))
    for arguments in ({"job_id": job.pk}, {"customer_id": shop.juan.pk}):
        result = run(outsider_ctx, "ticket_create", reason="complaint", summary="x", **arguments)
        assert not result.ok
        assert "not found" in result.error
    assert EscalationTicket.objects.count() == 0


def test_org_info_gives_hours_per_weekday_and_whether_open(ctx: TurnContext) -> None:
    org = ctx.organisation
    org.phone, org.address = "+54 11 4000-0000", "Av. Mitre 100, Avellaneda"
    org.save()
    early = run(ctx, "org_info")  # Monday 07:00: opens at 08:00
    assert early.ok
    assert early.data["name"] == "Clima Sur"
    assert early.data["phone"] == "+54 11 4000-0000"
    monday = {"day": "mon", "open": "08:00", "close": "18:00", "closed": False}
    assert early.data["hours"][0] == monday
    assert early.data["hours"][6]["closed"] is True
    assert early.data["open_now"] is False
    later = TurnContext(org, None, None, datetime.datetime(2026, 11, 23, 10, 0, tzinfo=BA))
    assert run(later, "org_info").data["open_now"] is True
    # Typed (issue 25.4), and its JSON for models byte for byte what the dict was.
    info = OrgInfo.of(early)
    assert info is not None and info.hours[5] == DayHours("sat", "09:00", "13:00", False)
    closed = {"open": None, "close": None, "closed": True}
    week = [{**monday, "day": d} for d in ("mon", "tue", "wed", "thu", "fri")] + [
        {"day": "sat", "open": "09:00", "close": "13:00", "closed": False}, {"day": "sun", **closed}
    ]  # fmt: skip
    assert json.dumps(early.as_dict()) == json.dumps({
        "ok": True,
        "data": {
            "name": "Clima Sur", "phone": "+54 11 4000-0000", "email": org.email,
            "address": "Av. Mitre 100, Avellaneda", "timezone": "America/Argentina/Buenos_Aires",
            "hours": week, "open_now": False, "today": "2026-11-23", "weekday": "mon",
        },
        "summary": "Clima Sur", "error": "",
    })  # fmt: skip


def test_org_info_is_the_callers_organisation(outsider_ctx: TurnContext) -> None:
    assert run(outsider_ctx, "org_info").data["name"] == "Frío Norte"
