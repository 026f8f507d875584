"""Fixtures for the orchestrator: the organisation's registry, a scripted router and handlers.

The graph's mechanics (gates, reroutes, hand-offs, partial success) are tested against a router
whose answers the test writes down, so a confidence is exactly what the test needs; the real
embedded router is exercised end to end in its own tests here and in tests/nlu.
The handlers are test doubles registered for the duration of one test; every tool they call is
the real one, over real rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest
from django.utils import timezone

from agents.base import HANDLERS, Mutation, Outcome, Runner, Step, load_handlers
from agents.context import TurnContext
from agents.defaults import default_specs
from agents.models import Agent
from agents.selectors import agents_for_org, intent_specs
from agents.services import agent_save, agents_install_defaults
from business.models import Organisation
from copilot import router_cache
from copilot.models import Conversation
from copilot.orchestration import nodes
from copilot.orchestration.state import TurnRun
from copilot.orchestration.streaming import TextStream
from copilot.services import conversation_create, message_add
from nlu.values import (
    Context,
    Directive,
    Entities,
    IntentSpecs,
    Task,
    Understanding,
    specs_by_name,
)
from tests import factories
from tests.conftest import Cast

# TAXONOMY.md: every default intent and the agent that handles it.
INTENTS: dict[str, str] = {
    **dict.fromkeys(["book_job", "reschedule", "cancel_job", "check_availability"], "scheduling"),
    **dict.fromkeys(
        ["create_customer", "search_customer", "update_customer", "validate_cuit"], "customer"
    ),
    **dict.fromkeys(["generate_quote", "generate_invoice", "payment_status"], "financial"),
    **dict.fromkeys(["assign_vehicle", "technician_sick", "bulk_reschedule", "dispatch"], "fleet"),
    **dict.fromkeys(["complaint", "emergency", "frustration_detected", "escalate"], "escalation"),
    **dict.fromkeys(["maintenance_due", "follow_up", "seasonal_reminder"], "proactive"),
    **dict.fromkeys(["greeting", "farewell", "hours", "pricing_info", "unknown"], "general"),
}
LABELS = {
    "scheduling": ("Agenda", "Scheduling"),
    "customer": ("Clientes", "Customers"),
    "financial": ("Finanzas", "Finance"),
    "fleet": ("Flota", "Fleet"),
    "escalation": ("Escalamiento", "Escalation"),
    "proactive": ("Proactivo", "Proactive"),
    "general": ("General", "General"),
}
TOOLS = {
    "scheduling": ["jobs_find", "job_book", "job_reschedule", "job_cancel"],
    "customer": ["customers_find", "customer_create"],
    "escalation": ["ticket_create"],  # a hand-off's ticket goes through Runner.call
}

if TYPE_CHECKING:
    from tests.copilot.demo_harness import Demo, DemoDatabase


def task(
    intent: str, confidence: float = 0.9, text: str = "", candidates: Any = (), **entities: Any
) -> Task:
    return Task(
        intent=intent,
        agent=INTENTS[intent],
        confidence=confidence,
        text=text or intent,
        entities=Entities(**entities),
        candidates=[(intent, confidence), *candidates],
    )


@dataclass
class ScriptedRouter:
    """The Router interface with written-down answers: text → tasks (or a directive)."""

    script: dict[str, list[Task] | Directive] = field(default_factory=dict)
    intents: dict[str, str] = field(default_factory=lambda: dict(INTENTS))
    fingerprint: str = "scripted"
    seen: list[str] = field(default_factory=list)
    specs: IntentSpecs = field(default_factory=default_specs)  # the shipped registry's

    def understand(self, text: str, ctx: Context) -> Understanding:
        self.seen.append(text)
        answer = self.script.get(text, [task("unknown", 0.2, text)])
        language = "en" if text.startswith("EN ") else "es"
        if isinstance(answer, Directive):
            return Understanding([], Entities(), language, answer, "rules")
        merged = Entities()
        for item in answer:
            merged = merged.merged_with(item.entities)
        return Understanding(list(answer), merged, language, None, "classifier")

    def use_registry(self, organisation: Organisation) -> None:
        """Hand the reading the organisation's registry, as the trained router does: an intent
        an admin added, with its facts."""
        self.specs = specs_by_name(intent_specs(organisation))
        self.intents.update({name: spec.agent for name, spec in self.specs.items()})


def add_intent(agent: Agent, **changes: Any) -> None:
    """The admin's save (the service the agent admin calls): the agent's intents as they are,
    plus (or changed by) `changes`."""
    intents = [
        {"name": row.name, "examples_es": row.examples_es, "examples_en": row.examples_en,
         "description": row.description}
        for row in agent.intents.all()
    ]  # fmt: skip
    intents = [i for i in intents if i["name"] != changes.get("name")] + [changes]
    agent_save(agent=agent, changes={}, intents=intents)


@pytest.fixture(autouse=True)
def fresh_routers(request: pytest.FixtureRequest) -> Iterator[None]:
    # Routers are cached per organisation id in the process; ids come back between tests. A
    # module marked `one_router` (the demo's end-to-end tests) keeps one: the router takes
    # seconds to train and the restored demo keeps its ids (router_cache still checks the
    # registry's fingerprint on every turn).
    if request.node.get_closest_marker("one_router"):
        yield
        return
    router_cache.forget()
    yield
    router_cache.forget()


# --- the demo, for the end-to-end turn tests (tests/copilot/demo_harness.py) --------------------


@pytest.fixture(scope="module")
def demo_database(django_db_setup: None, django_db_blocker: Any) -> Iterator[DemoDatabase]:
    from tests.copilot.demo_harness import open_demo_database  # it imports this conftest

    yield from open_demo_database(django_db_blocker)


@pytest.fixture(scope="module")
def demo_facts() -> dict[str, Any]:
    """What a module's cases need to know about the demo (a module overrides it)."""
    return {}


@pytest.fixture
def demo(demo_database: DemoDatabase, demo_facts: dict[str, Any]) -> Demo:
    from tests.copilot.demo_harness import pristine_demo

    return pristine_demo(demo_database, demo_facts)


@pytest.fixture
def registry(cast: Cast) -> dict[str, Agent]:
    """The organisation's seven agents, pinned to the settings these tests rely on."""
    agents_install_defaults(organisation=cast.org)
    agents: dict[str, Agent] = {}
    for name, (label_es, label_en) in LABELS.items():
        agent, _ = Agent.objects.update_or_create(
            organisation=cast.org,
            name=name,
            defaults={
                "label_es": label_es,
                "label_en": label_en,
                "category": name,
                "description": name,
                "tools": TOOLS.get(name, []),
                "requires_approval_for": [],
                "min_confidence": 0.35,
                "max_plan_steps": 3,
                "enabled": True,
            },
        )
        agents[name] = agent
    return agents


@pytest.fixture
def router(monkeypatch: pytest.MonkeyPatch) -> ScriptedRouter:
    scripted = ScriptedRouter()
    monkeypatch.setattr(nodes, "router_for", lambda organisation: scripted)
    return scripted


# --- test handlers -----------------------------------------------------------------------------


def _create_customer(step: Step, runner: Runner) -> Outcome:
    name = step.entities.customer or "Sin Nombre"
    result = runner.call("customer_create", name=name, street="Av. Mitre 100", zone="Sur")
    customer = result.data["customer"]
    return Outcome(
        text=f"Di de alta a {name}.",
        mutations=[Mutation(kind="customer", id=customer["id"], label=name)],
    )


def _book_job(step: Step, runner: Runner) -> Outcome:
    earlier = runner.earlier("customer")
    customer_id = earlier.id if earlier else runner.state.get("customer_id")
    day = step.entities.date or factories.next_monday()
    start = f"{day.isoformat()}T{step.entities.time or '10:00'}"
    result = runner.call(
        "job_book", customer_id=customer_id, service=step.entities.service or "service", start=start
    )
    if not result.ok:
        return Outcome(text=f"No pude agendar: {result.error}", success=False, error=result.error)
    job = result.data["job"]
    return Outcome(
        text=f"Agendé el trabajo #{job['id']} para {job['customer']}.",
        mutations=[Mutation(kind="job", id=job["id"], label=job["service"], data=job)],
    )


def _cancel_job(step: Step, runner: Runner) -> Outcome:
    # Deliberately does not report the approval id: the runtime must know it anyway.
    runner.call("job_cancel", job_id=runner.state["job_id"])
    return Outcome(text="La cancelación necesita aprobación.")


def _reschedule(step: Step, runner: Runner) -> Outcome:
    return Outcome(text=f"Reprogramo el trabajo #{runner.state.get('job_id')}.")


def _search_customer(step: Step, runner: Runner) -> Outcome:
    result = runner.call("customers_find", query=step.entities.customer or step.text)
    return Outcome(text=f"Encontré {len(result.data['customers'])} clientes.")


def _check_availability(step: Step, runner: Runner) -> Outcome:
    for _ in range(5):  # more than max_plan_steps allows
        runner.call("jobs_find")
    return Outcome(text="never reached")


def _explode(step: Step, runner: Runner) -> Outcome:
    raise RuntimeError("the invoice printer caught fire")


def _say(text: str) -> Any:
    def handler(step: Step, runner: Runner) -> Outcome:
        return Outcome(text=text)

    return handler


TEST_HANDLERS = {
    "create_customer": _create_customer,
    "book_job": _book_job,
    "cancel_job": _cancel_job,
    "reschedule": _reschedule,
    "search_customer": _search_customer,
    "check_availability": _check_availability,
    "generate_invoice": _explode,
    "emergency": _say("Emergencia: mando a alguien ya."),
    "greeting": _say("¡Hola! ¿En qué te ayudo?"),
    "unknown": _say("Eso no lo manejo."),
    "frustration_detected": _say("Te paso con una persona."),
    "complaint": _say("Registré el reclamo."),
}


@pytest.fixture
def handlers() -> Iterator[dict[str, Any]]:
    """The test handlers in HANDLERS for one test; whatever was there before comes back."""
    load_handlers()  # the real ones first, so a later import cannot collide with ours
    saved = dict(HANDLERS)
    HANDLERS.update(TEST_HANDLERS)
    yield HANDLERS
    HANDLERS.clear()
    HANDLERS.update(saved)


# --- turn helpers ------------------------------------------------------------------------------


@pytest.fixture
def conversation(cast: Cast) -> Conversation:
    return conversation_create(organisation=cast.org, user=cast.operator, channel="panel")


@pytest.fixture
def default_agents(cast: Cast) -> None:
    """The organisation with the agents a new organisation gets (not pinned like `registry`)."""
    agents_install_defaults(organisation=cast.org)


def job_under_discussion(cast: Cast, conversation: Conversation, customer_name: str) -> Any:
    """A booked job of a new customer, which the conversation is talking about (its state)."""
    customer = factories.make_customer(cast.org, customer_name)
    job = factories.make_job(cast.org, customer)
    conversation.state = {"job_id": job.pk, "customer_id": customer.pk}
    conversation.save()
    return job


@pytest.fixture
def technician(cast: Cast) -> Any:
    return factories.make_technician(cast.org, "Carlos Gómez", zone="Sur")


@dataclass
class Emitted:
    events: list[dict[str, Any]] = field(default_factory=list)

    def __call__(self, event: Any) -> None:
        self.events.append(dict(event))

    def types(self) -> list[str]:
        return [event["type"] for event in self.events]


def make_run(
    org: Organisation, user: Any, conversation: Conversation, text: str, emitted: Emitted
) -> TurnRun:
    """The graph's run context for `text`, stored as the user's message first."""
    message = message_add(conversation=conversation, role="user", text=text)
    ctx = TurnContext(
        organisation=org, user=user, conversation_id=conversation.pk, now=timezone.now(),
        turn_id=str(uuid.uuid4()), message_id=message.pk, text=text, emit=emitted,
    )  # fmt: skip
    agents = {agent.name: agent for agent in agents_for_org(org)}
    return TurnRun(
        ctx=ctx, engine="embedded", llm=None, stream=TextStream(emitted, ctx.turn_id), agents=agents
    )
