"""The registry's word before a step runs (agents/intent_gate.py): customers on WhatsApp only
use the intents open to them, a write asks for an entity its intent requires, and an intent
without a handler says it cannot do that yet."""

from __future__ import annotations

from django.utils import timezone

from agents.base import Chain, Runner, Step
from agents.context import TurnContext
from agents.customer_scope import NOT_FOR_CUSTOMERS
from agents.intent_gate import cannot_yet, check
from agents.models import Agent, AgentIntent
from business.models import Organisation
from nlu.values import Entities
from tests import factories


def _runner(
    agent: Agent, intent: str, language: str = "es", customer_id: int | None = None, **found: str
) -> Runner:
    ctx = TurnContext(
        organisation=agent.organisation, user=None, conversation_id=None, now=timezone.now(),
        customer_id=customer_id,
    )  # fmt: skip
    step = Step(0, intent, agent.name, 0.9, intent, Entities(**found))
    return Runner(ctx, Chain(language, {}), agent, step)


def test_a_customer_may_not_use_an_office_intent(
    org: Organisation, agents: dict[str, Agent]
) -> None:
    customer = factories.make_customer(org, "Rosa Díaz")
    office = _runner(agents["fleet"], "technician_sick", customer_id=customer.pk)
    stopped = check(office.step, office)
    assert stopped is not None and NOT_FOR_CUSTOMERS in stopped.text and not stopped.success
    theirs = _runner(agents["scheduling"], "book_job", customer_id=customer.pk)
    assert check(theirs.step, theirs) is None
    # The admin opens the intent to customers: it runs.
    AgentIntent.objects.filter(agent=agents["fleet"], name="technician_sick").update(customers=True)
    assert (
        check(office.step, _runner(agents["fleet"], "technician_sick", customer_id=customer.pk))
        is None
    )


def test_a_required_entity_is_asked_for_in_the_message_s_language(
    agents: dict[str, Agent],
) -> None:
    AgentIntent.objects.filter(agent=agents["scheduling"], name="book_job").update(
        requires=["technician"]
    )
    runner = _runner(agents["scheduling"], "book_job", "en", customer="Rosa Díaz")
    asked = check(runner.step, runner)
    assert asked is not None and asked.clarify is not None
    assert asked.text == "To book the job, tell me which technician."
    assert asked.clarify.slot == "technician"
    named = _runner(agents["scheduling"], "book_job", technician="Carlos Gómez")
    assert check(named.step, named) is None
    # A read never asks: the requirement is a write's.
    AgentIntent.objects.filter(agent=agents["customer"], name="search_customer").update(
        requires=["cuit"]
    )
    search = _runner(agents["customer"], "search_customer")
    assert check(search.step, search) is None


def test_after_the_question_limit_it_states_what_is_missing(agents: dict[str, Agent]) -> None:
    AgentIntent.objects.filter(agent=agents["scheduling"], name="book_job").update(
        requires=["technician"]
    )
    runner = _runner(agents["scheduling"], "book_job")
    runner.best_effort = True
    stated = check(runner.step, runner)
    assert stated is not None and stated.clarify is None
    assert stated.text == "No pude agendar el trabajo: no sé qué técnico es. No hice ningún cambio."


def test_an_intent_without_a_handler_cannot_do_it_yet() -> None:
    assert cannot_yet("es") == "Todavía no sé hacer eso."
    assert cannot_yet("en") == "I can't do that yet."
