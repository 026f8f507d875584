"""The handlers of the sub-agents on real rows, at a fixed moment: Monday 2026-11-23, 07:00 in
Buenos Aires. A small company (three technicians, two customers, a price list) and a second
organisation holding look-alike rows — same customer and technician names — that must never
appear in an answer.

Each test builds the turn the orchestrator would build: a TurnContext with a list-appending event
sink, a Step with the entities the router would extract, a Runner on the organisation's own agent
row, and calls the handler.
"""

from __future__ import annotations

import datetime
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import pytest

from agents.base import Chain, Handler, Mutation, Outcome, Runner, Step
from agents.context import TurnContext
from agents.models import Agent
from agents.registry import default_tool_names
from agents.services import agents_install_defaults
from business.models import Customer, Job, PriceItem, Technician
from nlu.values import Entities
from tests import factories
from tests.conftest import Cast

if TYPE_CHECKING:
    from tests.handlers.office import Office

BA = ZoneInfo("America/Argentina/Buenos_Aires")
NOW = datetime.datetime(2026, 11, 23, 7, 0, tzinfo=BA)
MONDAY = NOW.date()
TUESDAY = MONDAY + datetime.timedelta(days=1)
WEDNESDAY = MONDAY + datetime.timedelta(days=2)
THURSDAY = MONDAY + datetime.timedelta(days=3)
# Words of the other organisation's rows; none may show up in this organisation's answers.
FOREIGN_MARKS = ("Zoe Foránea", "+549999", "999.999", "999,999", "Calle Ajena")


def at(day: datetime.date, hour: int, minute: int = 0) -> datetime.datetime:
    return datetime.datetime.combine(day, datetime.time(hour, minute), tzinfo=BA)


@pytest.fixture
def agents(cast: Cast) -> dict[str, Agent]:
    """The organisation's own agent rows, with the shipped tools and the usual plan budget.

    Pinned here so a test fails only for the handler's reasons, whatever the defaults file says
    today. The financial agent also gets `jobs_find` (owned by scheduling): invoicing "the
    customer's latest finished job" needs it.
    """
    agents_install_defaults(organisation=cast.org)
    rows: dict[str, Agent] = {}
    for name in ("scheduling", "customer", "financial"):
        tools = default_tool_names(name) + (["jobs_find"] if name == "financial" else [])
        Agent.objects.update_or_create(
            organisation=cast.org,
            name=name,
            defaults={"tools": tools, "requires_approval_for": [], "max_plan_steps": 4,
                      "enabled": True, "label_es": name, "label_en": name,
                      "category": name, "description": name},
        )  # fmt: skip
        rows[name] = Agent.objects.get(organisation=cast.org, name=name)
    return rows


@dataclass
class Shop:
    carlos: Technician  # AC + heating, Sur
    lucia: Technician  # AC + gas + plumbing, CABA
    pedro: Technician  # electrical + plumbing, Norte
    juan: Customer  # Sur, with a phone
    maria: Customer  # CABA, a company with a CUIT
    split: PriceItem  # 150.000 + 21 %
    gas: PriceItem  # 60.000 + 10,5 %
    foreign_customer: Customer
    foreign_job: Job


@pytest.fixture
def shop(cast: Cast) -> Shop:
    org, other = cast.org, cast.other_org
    foreign_tech = factories.make_technician(other, "Zoe Foránea", skills=["ac"], zone="Sur")
    factories.make_technician(other, "Carlos Gómez", skills=["ac", "heating"], zone="Sur")
    foreign_customer = factories.make_customer(other, "Juan Pérez", zone="Sur", phone="+5499990000")
    foreign_customer.addresses.update(street="Calle Ajena 1")
    foreign_job = factories.make_job(
        other, foreign_customer, at(TUESDAY, 10), technician=foreign_tech, service="Service ajeno"
    )
    factories.make_invoice(other, foreign_customer, Decimal("999999"))
    factories.make_price_item(other, "Instalación de split", "999999", keywords="split")
    return Shop(
        carlos=factories.make_technician(org, "Carlos Gómez", skills=["ac", "heating"], zone="Sur"),
        lucia=factories.make_technician(
            org, "Lucía Fernández", skills=["ac", "gas", "plumbing"], zone="CABA"
        ),
        pedro=factories.make_technician(
            org, "Pedro Ruiz", skills=["electrical", "plumbing"], zone="Norte"
        ),
        juan=factories.make_customer(org, "Juan Pérez", zone="Sur", phone="+541145678901"),
        maria=factories.make_customer(
            org, "María González SRL", zone="CABA", kind="company", cuit="30-71234567-1"
        ),
        split=factories.make_price_item(
            org,
            "Instalación de split hasta 3000 frigorías",
            "150000",
            name_en="Split AC installation",
            category="ac",
            keywords="instalacion split aire acondicionado",
        ),  # fmt: skip
        gas=factories.make_price_item(
            org,
            "Carga de gas refrigerante",
            "60000",
            category="ac",
            keywords="carga gas r410 recarga",
            iva_rate=Decimal("10.5"),
        ),  # fmt: skip
        foreign_customer=foreign_customer,
        foreign_job=foreign_job,
    )


@dataclass
class Turn:
    """One handler run: what it returned, the events it emitted and the runner it used."""

    outcome: Outcome
    events: list[dict[str, Any]] = field(default_factory=list)
    runner: Runner | None = None

    @property
    def text(self) -> str:
        return self.outcome.text

    @property
    def tools(self) -> list[str]:
        return list(self.runner.tools_invoked) if self.runner else []


@dataclass
class Desk:
    """Runs handlers for the organisation as its operator would through the orchestrator."""

    cast: Cast
    agents: dict[str, Agent]
    now: datetime.datetime = NOW

    def run(
        self,
        handler: Handler,
        intent: str,
        agent: str,
        *,
        text: str = "",
        language: str = "es",
        state: dict[str, Any] | None = None,
        earlier: list[Mutation] | None = None,
        resumed: bool = False,
        best_effort: bool = False,
        **entities: Any,
    ) -> Turn:
        """`resumed`: the step answers a clarification (its text is the request, then the
        answer on its own line); `best_effort`: the conversation already asked twice (O8)."""
        events: list[dict[str, Any]] = []
        ctx = TurnContext(
            organisation=self.cast.org, user=self.cast.operator, conversation_id=None,
            now=self.now, turn_id=uuid.uuid4().hex, emit=events.append,
        )  # fmt: skip
        chain = Chain(language, dict(state or {}), list(earlier or []))
        step = Step(index=0, intent=intent, agent=agent, confidence=0.9, text=text or intent,
                    entities=Entities(**entities), resumed=resumed)  # fmt: skip
        runner = Runner(ctx, chain, self.agents[agent], step)
        runner.best_effort = best_effort
        return Turn(outcome=handler(step, runner), events=events, runner=runner)


@pytest.fixture
def desk(cast: Cast, agents: dict[str, Agent]) -> Desk:
    return Desk(cast=cast, agents=agents)


def assert_no_foreign_data(text: str) -> None:
    for mark in FOREIGN_MARKS:
        assert mark not in text, f"the other organisation's {mark!r} leaked into: {text}"


# --- the office (tests/handlers/office.py: imported here late, it builds on Desk above) ---------


@pytest.fixture
def office(cast: Cast) -> Office:
    """The fleet, escalation, proactive and general agents at the desk's Monday 07:00."""
    from tests.handlers.office import Office, install_office_agents

    return Office(cast=cast, agents=install_office_agents(cast.org))


@pytest.fixture
def office_at_work(cast: Cast) -> Office:
    """The same office at 10:00 on Monday: the crew is at work, so "the nearest free technician"
    (an emergency, a dispatch) has an answer."""
    from tests.handlers.office import Office, install_office_agents

    return Office(cast=cast, agents=install_office_agents(cast.org), now=at(MONDAY, 10))
