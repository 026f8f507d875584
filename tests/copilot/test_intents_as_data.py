"""Intents as data (issue 24): what the registry says about an intent is all the product knows.

An admin adds an intent with its examples and its facts through the registry (the service the
agent admin calls) — no code: it is routed, ordered by its prerequisites, tried on the "try an
utterance" page and answered with its phrase, and, having no handler, it says it cannot do that
yet and writes nothing. Requiring an entity of a write makes a message without it ask for it.
These run the real router (trained from the registry) and the real graph.
"""

from __future__ import annotations

from typing import Any

import pytest

from agents.models import Agent, AgentIntent, ToolCall
from business.models import Job
from copilot.orchestration.graph import run_graph
from copilot.router_cache import router_for
from copilot.services import conversation_create
from copilot.tryout import try_utterance
from nlu.values import Context
from tests import factories
from tests.conftest import Cast
from tests.copilot.conftest import Emitted, add_intent, make_run
from tests.nlu.conftest import make_context

pytestmark = pytest.mark.usefixtures("registry")

ORDER_PARTS: dict[str, Any] = {
    "name": "order_parts",
    "description": "Order spare parts from the supplier for a job",
    "examples_es": [
        "pedí los repuestos del compresor",
        "encargá un capacitor para el split",
        "hay que pedir una plaqueta nueva al proveedor",
        "pedile al proveedor dos termostatos",
        "encargame las piezas para la caldera",
        "pedí el repuesto de la bomba",
        "comprá un motor ventilador para el equipo",
        "hacé el pedido de repuestos al proveedor",
    ],
    "examples_en": [
        "order the compressor parts",
        "order a capacitor for the split unit",
        "we need to order a new board from the supplier",
        "order two thermostats from the supplier",
        "buy a fan motor for the unit",
        "place a parts order with the supplier",
    ],
    "writes": True,
    "after": ["book_job"],
    "phrase_es": "pedir los repuestos",
    "phrase_en": "order the parts",
    "customers": False,
}


def _turn(cast: Cast, text: str) -> dict[str, Any]:
    conversation = conversation_create(organisation=cast.org, user=cast.operator, channel="panel")
    return run_graph(make_run(cast.org, cast.operator, conversation, text, Emitted()))


def _context() -> Context:
    return make_context()


def test_an_intent_added_in_the_registry_is_routed_ordered_and_never_writes(
    cast: Cast, registry: dict[str, Agent]
) -> None:
    router = router_for(cast.org)
    assert "order_parts" not in router.intents
    add_intent(registry["fleet"], **ORDER_PARTS)

    router = router_for(cast.org)  # the registry changed: retrained, with the new intent's spec
    alone = router.understand("pedí los repuestos del compresor del split", _context())
    assert [(t.intent, t.agent) for t in alone.tasks] == [("order_parts", "fleet")]
    # Its prerequisite comes first, whatever the text's order.
    chain = router.understand(
        "pedí los repuestos del compresor y agendale un service a Juan Pérez el lunes a las 10",
        _context(),
    )
    assert [t.intent for t in chain.tasks] == ["book_job", "order_parts"]
    assert chain.trace["reordered"] is True

    jobs, calls = Job.objects.count(), ToolCall.objects.count()
    state = _turn(cast, "pedí los repuestos del compresor del split")
    assert "Todavía no sé hacer eso." in state["reply"]
    assert (Job.objects.count(), ToolCall.objects.count()) == (jobs, calls)  # nothing written


def test_an_added_intent_is_answered_with_its_phrase_in_a_chain(
    cast: Cast, registry: dict[str, Agent]
) -> None:
    factories.make_customer(cast.org, "Juan Pérez")
    customer = registry["customer"]
    customer.tools = [*customer.tools, "customer_history"]
    customer.save()
    add_intent(registry["fleet"], **(ORDER_PARTS | {"after": []}))
    state = _turn(cast, "buscame a Juan Pérez y pedí los repuestos del compresor")
    assert [r.step.intent for r in state["delegation"].final_runs()] == [
        "search_customer", "order_parts",
    ]  # fmt: skip
    assert "Todavía no sé hacer eso." in state["reply"]
    assert "Hecho: buscar al cliente. Sin hacer: pedir los repuestos." in state["reply"]


def test_the_try_page_shows_an_added_intent_and_its_reply(
    cast: Cast, registry: dict[str, Agent]
) -> None:
    add_intent(registry["fleet"], **ORDER_PARTS)
    tried = try_utterance(cast.org, cast.admin, "order the compressor parts for the split")
    assert [(s.intent, s.agent) for s in tried.steps] == [("order_parts", "fleet")]
    assert tried.steps[0].reply == "I can't do that yet."
    assert tried.steps[0].calls == []


def test_a_write_that_requires_an_entity_asks_for_it_when_the_message_lacks_it(
    cast: Cast, registry: dict[str, Agent]
) -> None:
    scheduling = registry["scheduling"]
    book = scheduling.intents.get(name="book_job")
    assert book.writes and book.requires == []
    add_intent(
        scheduling,
        name="book_job", description=book.description, examples_es=book.examples_es,
        examples_en=book.examples_en, requires=["technician"],
    )  # fmt: skip
    assert scheduling.intents.get(name="book_job").requires == ["technician"]
    factories.make_customer(cast.org, "Juan Pérez")
    jobs = Job.objects.count()

    state = _turn(cast, "agendale un service a Juan Pérez el lunes a las 10")

    (run,) = state["delegation"].final_runs()
    assert run.step.intent == "book_job"
    assert run.outcome.clarify is not None and run.outcome.clarify.slot == "technician"
    assert "Para agendar el trabajo, decime qué técnico." in state["reply"]
    assert Job.objects.count() == jobs


def test_an_added_intent_about_a_technician_reads_the_person_named_as_one(
    cast: Cast, registry: dict[str, Agent]
) -> None:
    text = "encargá un capacitor para Sosa"
    add_intent(registry["fleet"], **ORDER_PARTS)
    plain = router_for(cast.org).understand(text, _context())
    assert [t.intent for t in plain.tasks] == ["order_parts"]
    assert (plain.entities.customer, plain.entities.technician) == ("Sosa", None)

    add_intent(registry["fleet"], **(ORDER_PARTS | {"subject": "technician"}))  # the admin's edit

    read = router_for(cast.org).understand(text, _context())
    assert (read.entities.customer, read.entities.technician) == (None, "Sosa")


PRAISE: dict[str, Any] = {
    "name": "praise",
    "description": "The operator praises the copilot",
    "examples_es": ["sos un genio", "sos una máquina", "qué crack que sos", "sos lo más",
                    "qué bien que lo hiciste", "me encanta cómo trabajás", "sos un capo total",
                    "qué eficiente que sos"],
    "examples_en": ["you're a genius", "you're the best", "you rock", "amazing work",
                    "you're awesome", "love how you work"],
}  # fmt: skip


@pytest.mark.parametrize(("role", "kept"), [("courtesy", False), ("", True)])
def test_an_added_intent_s_role_says_whether_it_is_dropped_beside_a_request(
    cast: Cast, registry: dict[str, Agent], role: str, kept: bool
) -> None:
    """The registry's role, not a table in the code: a courtesy intent an admin adds goes when
    a request comes with it, a request-intent stays."""
    add_intent(registry["general"], **PRAISE, role=role)
    router = router_for(cast.org)
    assert router.understand("sos un genio", _context()).intents == ["praise"]
    reading = router.understand(
        "sos un genio. agendale un service a Juan Pérez el lunes a las 10", _context()
    )
    assert "book_job" in reading.intents
    assert ("praise" in reading.intents) is kept


@pytest.mark.parametrize(
    ("named_as", "read"), [("payment_status", "payment_status"), ("", "order_parts")]
)
def test_an_added_intent_says_what_a_named_invoice_reads_as(
    cast: Cast, registry: dict[str, Agent], named_as: str, read: str
) -> None:
    """The registry's `invoice_named_as`, not a table in nlu/: an intent an admin adds says
    what a request of it that names an existing invoice is about."""
    add_intent(registry["fleet"], **ORDER_PARTS, invoice_named_as=named_as)
    reading = router_for(cast.org).understand("pedí los repuestos de la factura B 12", _context())
    assert reading.entities.invoice_number == "0001-00000012"
    assert reading.intents == [read]


BOOK = "agendame a Carla Mendoza para mañana 10hs, service de caldera. "
UPDATE = "Actualizale el celular al 11 6789 0011"


@pytest.mark.parametrize(
    ("said", "new_as", "read"),
    [
        # Said to be new: nobody to update, the registry's `new_as` registers her first.
        (BOOK + "Es clienta nueva. " + UPDATE, "create_customer", ["create_customer", "book_job"]),
        (BOOK + UPDATE, "create_customer", ["book_job", "update_customer"]),
        # Without `new_as` the update stays beside the stated registration.
        (
            BOOK + "Es clienta nueva. " + UPDATE,
            "",
            ["create_customer", "book_job", "update_customer"],
        ),
    ],
)
def test_updating_a_customer_said_to_be_new_reads_as_the_registry_s_new_as(
    cast: Cast, said: str, new_as: str, read: list[str]
) -> None:
    intent = AgentIntent.objects.get(agent__organisation=cast.org, name="update_customer")
    intent.new_as = new_as
    intent.save(update_fields=["new_as"])
    reading = router_for(cast.org).understand(said, _context())
    assert reading.intents == read
    assert reading.entities.customer == "Carla Mendoza"
