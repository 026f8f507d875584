"""A tool context per organisation at a fixed moment: Monday 2026-11-23, 07:00 in Buenos Aires."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from agents.context import TurnContext
from agents.registry import ToolResult, get_tool
from business.models import Customer, Job, PriceItem, Technician, Vehicle
from tests import factories
from tests.conftest import Cast

BA = ZoneInfo("America/Argentina/Buenos_Aires")
NOW = datetime.datetime(2026, 11, 23, 7, 0, tzinfo=BA)
MONDAY = NOW.date()


def at(day: datetime.date, hour: int, minute: int = 0) -> datetime.datetime:
    return datetime.datetime.combine(day, datetime.time(hour, minute), tzinfo=BA)


def run(ctx: TurnContext, tool_name: str, /, **arguments: Any) -> ToolResult:
    return get_tool(tool_name).run(ctx, arguments)


@pytest.fixture
def ctx(cast: Cast) -> TurnContext:
    return TurnContext(organisation=cast.org, user=cast.operator, conversation_id=None, now=NOW)


@pytest.fixture
def outsider_ctx(cast: Cast) -> TurnContext:
    return TurnContext(
        organisation=cast.other_org, user=cast.outsider, conversation_id=None, now=NOW
    )


@dataclass
class Shop:
    """A small company: three technicians in different zones, customers, vehicles, a price
    list — and a second organisation with rows the first must never reach."""

    carlos: Technician  # AC + heating, Sur
    lucia: Technician  # AC + gas + plumbing, CABA
    pedro: Technician  # electrical + plumbing, Norte
    juan: Customer  # Sur
    maria: Customer  # CABA, a company
    van: Vehicle  # Carlos's usual van
    pickup: Vehicle
    split: PriceItem
    gas: PriceItem
    foreign_customer: Customer
    foreign_technician: Technician
    foreign_job: Job
    foreign_vehicle: Vehicle


@pytest.fixture
def shop(cast: Cast) -> Shop:
    org, other = cast.org, cast.other_org
    carlos = factories.make_technician(org, "Carlos Gómez", skills=["ac", "heating"], zone="Sur")
    lucia = factories.make_technician(
        org, "Lucía Fernández", skills=["ac", "gas", "plumbing"], zone="CABA"
    )
    pedro = factories.make_technician(
        org, "Pedro Ruiz", skills=["electrical", "plumbing"], zone="Norte"
    )
    foreign_customer = factories.make_customer(other, "Juan Pérez", zone="Sur")
    foreign_technician = factories.make_technician(other, "Carlos Gómez", zone="Sur")
    return Shop(
        carlos=carlos,
        lucia=lucia,
        pedro=pedro,
        juan=factories.make_customer(org, "Juan Pérez", zone="Sur", phone="+541145678901"),
        maria=factories.make_customer(
            org, "María González SRL", zone="CABA", kind="company", cuit="30-71234567-1"
        ),
        van=factories.make_vehicle(org, "AA111AA", technician=carlos),
        pickup=factories.make_vehicle(org, "BB222BB", kind="pickup"),
        split=factories.make_price_item(
            org,
            "Instalación de split hasta 3000 frigorías",
            "150000",
            name_en="Split AC installation",
            category="ac",
            keywords="instalacion split aire acondicionado",
        ),
        gas=factories.make_price_item(
            org,
            "Carga de gas refrigerante",
            "60000",
            category="ac",
            keywords="carga gas r410 recarga",
            iva_rate=Decimal("10.5"),
        ),
        foreign_customer=foreign_customer,
        foreign_technician=foreign_technician,
        foreign_job=factories.make_job(
            other, foreign_customer, at(MONDAY, 10), technician=foreign_technician
        ),
        foreign_vehicle=factories.make_vehicle(other, "ZZ999ZZ"),
    )
