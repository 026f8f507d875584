"""The escalation agent's handlers: every one opens a ticket with the right reason and priority,
linked to the customer and job when known; an emergency leads with the safety instruction."""

from __future__ import annotations

import json

import pytest

from agents.base import HANDLERS, load_handlers
from agents.escalation.agent import (
    complaint,
    danger_in,
    emergency,
    escalate,
    frustration_detected,
)
from agents.escalation.tools import TicketResult
from agents.models import ToolCall
from business.models import EscalationTicket
from tests import factories
from tests.conftest import Cast
from tests.handlers.conftest import BA, MONDAY, TUESDAY, Shop, assert_no_foreign_data, at
from tests.handlers.office import OFFICE_TOOLS, SHIPPED_TOOLS, Office, install_office_agents

pytestmark = pytest.mark.django_db


def _tickets(cast: Cast) -> list[EscalationTicket]:
    return list(EscalationTicket.objects.filter(organisation=cast.org).order_by("pk"))


def test_every_escalation_intent_has_a_handler() -> None:
    load_handlers()
    assert {"complaint", "emergency", "escalate", "frustration_detected"} <= set(HANDLERS)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("hay olor a gas en la cocina", "gas"),
        ("se inundó el baño, sale agua por todos lados", "water"),
        ("sale humo del tablero", "fire"),
        ("saltan chispas del enchufe", "electricity"),
        ("suena la alarma de monóxido", "co"),
        ("sin calefacción y con un bebé en casa, no hay agua caliente", "heating"),
        ("gas leak in the basement", "gas"),
        ("it's an emergency, come now", "other"),
    ],
)
def test_the_danger_decides_the_safety_instruction(text: str, kind: str) -> None:
    assert danger_in(text).kind == kind


# --- emergency --------------------------------------------------------------------------------


def test_a_gas_emergency_opens_an_urgent_ticket_and_proposes_the_nearest_gas_technician(
    office_at_work: Office, shop: Shop, cast: Cast
) -> None:
    turn = office_at_work.run(
        emergency, "emergency", "escalation", text="Juan Pérez dice que hay olor a gas",
        customer="Juan Pérez",
    )  # fmt: skip
    assert turn.outcome.success, turn.outcome.error
    [ticket] = _tickets(cast)
    assert (ticket.reason, ticket.priority, ticket.customer_id) == (
        "emergency", "urgent", shop.juan.pk,
    )  # fmt: skip
    assert ticket.summary == "pérdida de gas: Juan Pérez dice que hay olor a gas"
    lines = turn.text.splitlines()
    assert lines[0].startswith(
        "Emergencia (pérdida de gas). Primero, seguridad: Cerrar la llave de paso del gas, no "
        "accionar interruptores"
    )
    assert f"Abrí el ticket urgente #{ticket.pk} de Juan Pérez (" in lines[1]
    assert "+54 11 4567-8901" in lines[1]
    # Only Lucía has the gas trade; she works in CABA, next to Juan's Sur.
    assert lines[2] == ("El técnico libre más cercano: Lucía Fernández (CABA, zona vecina).")
    assert turn.tools == ["customer_history", "ticket_create", "technicians_nearest"]
    assert [m.kind for m in turn.outcome.mutations] == ["customer"]
    assert_no_foreign_data(turn.text)
    assert not EscalationTicket.objects.filter(organisation=cast.other_org).exists()


def test_an_emergency_without_a_customer_still_opens_the_ticket_and_asks_for_the_address(
    office_at_work: Office, shop: Shop, cast: Cast
) -> None:
    turn = office_at_work.run(
        emergency, "emergency", "escalation", text="flooding in the kitchen!", language="en"
    )
    [ticket] = _tickets(cast)
    assert (ticket.priority, ticket.customer_id) == ("urgent", None)
    assert turn.text.startswith("Emergency (water leak). Safety first: Shut the main water valve")
    assert f"urgent ticket #{ticket.pk}: a person in the office is taking it now" in turn.text
    assert "Send me the customer or the address" in turn.text
    assert turn.tools == ["ticket_create"]


def test_an_emergency_for_an_ambiguous_name_is_not_delayed(
    office_at_work: Office, shop: Shop, cast: Cast
) -> None:
    factories.make_customer(cast.org, "Juan Pérez Hijo", zone="CABA")
    turn = office_at_work.run(
        emergency, "emergency", "escalation", text="chispas en lo de Juan", customer="Juan"
    )
    [ticket] = _tickets(cast)
    assert (ticket.priority, ticket.customer_id) == ("urgent", None)
    assert "Hay varios clientes «Juan»" in turn.text
    assert turn.text.startswith("Emergencia (riesgo eléctrico). Primero, seguridad: Cortar la luz")


def test_an_emergency_with_the_shipped_tools_finds_the_customer_by_search(
    cast: Cast, shop: Shop
) -> None:
    tools = {**OFFICE_TOOLS, "escalation": SHIPPED_TOOLS["escalation"]}
    office = Office(cast=cast, agents=install_office_agents(cast.org, tools), now=at(MONDAY, 10))
    turn = office.run(
        emergency, "emergency", "escalation", text="olor a gas", customer="Juan Pérez"
    )
    [ticket] = _tickets(cast)
    assert (ticket.priority, ticket.customer_id) == ("urgent", shop.juan.pk)
    assert turn.outcome.success
    # The shipped agent reads the customer's history and proposes the nearest technician.
    assert "ticket_create" in turn.tools and "technicians_nearest" in turn.tools
    assert "+54 11 4567-8901" in turn.text
    assert_no_foreign_data(turn.text)


def test_an_emergency_within_a_one_call_budget_still_opens_the_ticket(
    office_at_work: Office, shop: Shop, cast: Cast
) -> None:
    agent = office_at_work.agents["escalation"]
    agent.max_plan_steps = 1
    turn = office_at_work.run(
        emergency, "emergency", "escalation", text="olor a gas", customer="Juan Pérez"
    )
    [ticket] = _tickets(cast)
    assert (ticket.priority, ticket.customer_id) == ("urgent", shop.juan.pk)
    assert turn.tools == ["ticket_create"]
    assert turn.text.startswith("Emergencia (pérdida de gas). Primero, seguridad:")


# --- complaint --------------------------------------------------------------------------------


def test_an_angry_complaint_is_high_priority_and_linked_to_the_latest_job(
    office_at_work: Office, shop: Shop, cast: Cast
) -> None:
    org = cast.org
    factories.make_job(org, shop.juan, at(MONDAY, 8), technician=shop.carlos, status="done")
    older = factories.make_job(org, shop.juan, at(MONDAY, 8).replace(day=2), status="done")
    factories.make_job(org, shop.juan, at(TUESDAY, 8), technician=shop.carlos)  # upcoming
    latest = factories.make_job(
        org, shop.juan, at(MONDAY, 9), technician=shop.carlos, status="done",
        service="Reparación de split",
    )  # fmt: skip
    turn = office_at_work.run(
        complaint, "complaint", "escalation",
        text="EL TÉCNICO DEJÓ TODO SUCIO Y EL AIRE SIGUE SIN ANDAR!!!", customer="Juan Pérez",
    )  # fmt: skip
    assert turn.outcome.success, turn.outcome.error
    [ticket] = _tickets(cast)
    assert (ticket.reason, ticket.priority) == ("complaint", "high")
    assert (ticket.customer_id, ticket.job_id) == (shop.juan.pk, latest.pk)
    assert ticket.job_id != older.pk
    text = turn.text
    assert text.startswith(
        f"Registré el reclamo de Juan Pérez: ticket #{ticket.pk}, prioridad alta. Lo vinculé al "
        f"trabajo #{latest.pk} Reparación de split (23/11/2026, con Carlos Gómez)."
    )
    assert "se comunica con el cliente (+54 11 4567-8901)" in text
    assert text.endswith("Lamento mucho lo que pasó.")
    assert_no_foreign_data(text)


def test_a_calm_complaint_about_the_job_under_discussion_is_normal_priority(
    office_at_work: Office, shop: Shop, cast: Cast
) -> None:
    job = factories.make_job(cast.org, shop.maria, at(MONDAY, 8), technician=shop.lucia)
    turn = office_at_work.run(
        complaint, "complaint", "escalation", text="the customer says the invoice was wrong",
        language="en", state={"job_id": job.pk, "customer_id": shop.maria.pk},
    )  # fmt: skip
    [ticket] = _tickets(cast)
    assert (ticket.priority, ticket.job_id, ticket.customer_id) == (
        "normal", job.pk, shop.maria.pk,
    )  # fmt: skip
    assert "normal priority" in turn.text and "I'm sorry about this." in turn.text
    # ticket_create returns a TicketResult: the model's JSON, the ToolCall row and the
    # tool_result event are byte for byte what its dict gave (issue 25.4).
    assert turn.runner is not None
    [(tool, result)] = [(n, r) for n, r in turn.runner.results if n == "ticket_create"]
    opened = TicketResult.of(result)
    assert opened is not None and opened.ticket.customer == "María González SRL"
    created = ticket.created_at.astimezone(BA).isoformat(timespec="minutes")
    # Compared as text: the same keys, in the same order, with the same values.
    assert json.dumps(result.as_dict()) == json.dumps({
        "ok": True,
        "data": {"ticket": {
            "id": ticket.pk, "reason": "complaint", "priority": "normal", "status": "open",
            "summary": "the customer says the invoice was wrong", "customer_id": shop.maria.pk,
            "customer": "María González SRL", "job_id": job.pk, "created_at": created,
        }},
        "summary": f"ticket #{ticket.pk} opened (normal)", "error": "",
    })  # fmt: skip
    row = ToolCall.objects.get(organisation=cast.org, tool="ticket_create")
    assert (row.ok, row.summary, row.error) == (True, f"ticket #{ticket.pk} opened (normal)", "")
    [event] = [e for e in turn.events if e["type"] == "tool_result" and e["tool"] == tool]
    assert {k: v for k, v in event.items() if k != "turn_id"} == {
        "type": "tool_result", "agent": "escalation", "tool": "ticket_create", "ok": True,
        "summary": f"ticket #{ticket.pk} opened (normal)",
        "line": f"Opened ticket #{ticket.pk}",
        "records": [{"kind": "ticket", "id": ticket.pk, "label": f"#{ticket.pk}"}],
    }  # fmt: skip


@pytest.mark.parametrize(
    ("language", "text"),
    [
        ("en", "Juan Pérez is furious: the technician came three hours late. Unacceptable."),
        ("es", "Juan Pérez está furioso, el técnico llegó tres horas tarde. Es inaceptable."),
    ],
)
def test_anger_said_in_words_makes_a_complaint_high_priority(
    office_at_work: Office, shop: Shop, cast: Cast, language: str, text: str
) -> None:
    turn = office_at_work.run(
        complaint, "complaint", "escalation", text=text, customer="Juan Pérez", language=language
    )
    [ticket] = _tickets(cast)
    assert ticket.priority == "high"
    if language == "en":
        assert "will review it and contact the customer (+54 11 4567-8901)." in turn.text


def test_a_complaint_for_an_ambiguous_customer_asks_which_and_files_nothing(
    office_at_work: Office, shop: Shop, cast: Cast
) -> None:
    factories.make_customer(cast.org, "Juan Pérez Hijo", zone="CABA")
    turn = office_at_work.run(
        complaint, "complaint", "escalation", text="Juan se queja", customer="Juan"
    )
    assert not turn.outcome.success
    assert "Hay varios clientes que coinciden con «Juan»" in turn.text
    assert _tickets(cast) == []
    assert_no_foreign_data(turn.text)


def test_a_complaint_from_an_unknown_customer_is_recorded_unlinked(
    office_at_work: Office, shop: Shop, cast: Cast
) -> None:
    turn = office_at_work.run(
        complaint, "complaint", "escalation", text="Rita Gómez reclama por la demora",
        customer="Rita Gómez",
    )  # fmt: skip
    [ticket] = _tickets(cast)
    assert ticket.customer_id is None and ticket.reason == "complaint"
    assert "No encontré ningún cliente «Rita Gómez», así que quedó sin cliente" in turn.text


# --- escalate and frustration -----------------------------------------------------------------


def test_escalate_opens_a_ticket_and_says_a_person_takes_over(
    office_at_work: Office, shop: Shop, cast: Cast
) -> None:
    turn = office_at_work.run(
        escalate, "escalate", "escalation", text="quiero hablar con un supervisor",
        state={"customer_id": shop.juan.pk, "customer_label": "Juan Pérez"},
    )  # fmt: skip
    [ticket] = _tickets(cast)
    assert (ticket.reason, ticket.priority, ticket.customer_id) == (
        "escalate", "normal", shop.juan.pk,
    )  # fmt: skip
    assert turn.text.startswith(
        f"Te paso con una persona: abrí el ticket #{ticket.pk} (prioridad normal, por Juan "
        "Pérez) y un encargado toma la conversación en breve."
    )
    assert turn.tools == ["ticket_create"]


def test_frustration_gets_a_high_priority_ticket_and_a_calm_reply(
    office_at_work: Office, shop: Shop, cast: Cast
) -> None:
    turn = office_at_work.run(
        frustration_detected, "frustration_detected", "escalation",
        text="ES LA TERCERA VEZ QUE ESCRIBO!!! NADIE RESPONDE",
    )  # fmt: skip
    [ticket] = _tickets(cast)
    assert (ticket.reason, ticket.priority) == ("frustration", "high")
    assert turn.text.startswith("Te pido disculpas por las vueltas.")
    assert f"ticket #{ticket.pk}" in turn.text
    assert " pero " not in turn.text  # no "but": nothing defensive


def test_a_ticket_the_tool_refuses_is_a_clear_failure(
    office_at_work: Office, shop: Shop, cast: Cast
) -> None:
    # A job id of the other organisation reads like a missing one.
    turn = office_at_work.run(
        escalate, "escalate", "escalation", text="pasame con alguien",
        state={"job_id": shop.foreign_job.pk},
    )  # fmt: skip
    assert not turn.outcome.success
    assert turn.outcome.error == f"job {shop.foreign_job.pk} not found"
    assert "No pude abrir el ticket" in turn.text
    assert _tickets(cast) == []
    assert_no_foreign_data(turn.text)
