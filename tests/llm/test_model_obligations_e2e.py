"""What holds whatever the model does (T3, O4), on real turns against the scripted
OpenAI-compatible server (see test_engine_e2e.py):

- emergencies are deterministic on every engine: when the signals or the embedded reading flag
  one, the escalation agent's emergency handler runs — safety first, then the urgent ticket; the
  model may add steps, never drop, empty or double that one;
- text a model streamed and the answer replaced (its stream broke, or the orchestrator answered a
  request itself) gets a `retract` event before the replacement, in the log and its replay;
- courtesy read below its gate: hybrid asks the model; without it, a deterministic small-talk line.
"""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync

from agents.models import Agent
from business.models import EscalationTicket, Organisation
from copilot import eventlog
from copilot.models import AgentRun, Conversation, ConversationEvent
from testing import scripted
from testing.scripted import ScriptedServer, for_tool, tool_calls
from tests.conftest import Cast
from tests.copilot.test_consumer import _open, _receive
from tests.llm import test_engine_e2e as engine_tests
from tests.llm.test_engine_e2e import (
    FINANCIAL,
    GENERAL,
    ORCHESTRATOR,
    Turn,
    agent_requests,
    ask,
    call,
)

pytestmark = [pytest.mark.django_db(transaction=True)]

# The engine tests' fixtures: the scripted server, an llm organisation, its conversation.
server = engine_tests.server
org = engine_tests.org
conversation = engine_tests.conversation

# --- emergencies ------------------------------------------------------------------------------

ESCALATION = for_tool("ticket_create")
GAS = "hay olor a gas en la cocina y tengo a los chicos acá, vengan ya"
GAS_AND_DEBT = (
    "olor a gas fuerte en el edificio de Olazábal 3400, manden a alguien urgente y después "
    "fijate cuánto nos debe el consorcio"
)


def tickets(org: Organisation) -> list[EscalationTicket]:
    return list(EscalationTicket.objects.filter(organisation=org))


def emergency_run(turn: Turn) -> AgentRun:
    return AgentRun.objects.get(turn_id=turn.result.turn_id, agent="escalation")


def assert_one_urgent_ticket(org: Organisation, turn: Turn) -> EscalationTicket:
    (ticket,) = tickets(org)
    assert (ticket.reason, ticket.priority) == ("emergency", "urgent")
    run = emergency_run(turn)
    assert (run.intent, run.success) == ("emergency", True)
    assert run.tools[0] == "ticket_create"
    assert f"#{ticket.pk}" in turn.reply
    assert "Cerrar la llave de paso del gas" in turn.reply
    (step,) = [s for s in turn.trace()["steps"] if s["agent"] == "escalation"]
    assert step["engine"] == "embedded" and step["index"] == 0
    return ticket


@pytest.mark.parametrize("where", ["orchestrator", "agent"])
def test_a_model_that_answers_a_gas_leak_with_text_alone_still_gets_the_ticket_opened(
    cast: Cast, org: Organisation, conversation: Conversation, server: ScriptedServer, where: str
) -> None:
    # What a real model did: it wrote a kind sentence and called nothing.
    if where == "orchestrator":
        server.add(scripted.text("¡Uy! Salgan ya de la casa."), when=ORCHESTRATOR)
    else:
        server.add(tool_calls([call("escalation", GAS, intent="emergency")]), when=ORCHESTRATOR)
    server.add(scripted.text("Tranqui, ya lo vemos."), when=ESCALATION, times=None)
    assert tickets(org) == []

    turn = ask(cast, conversation, GAS)

    assert_one_urgent_ticket(org, turn)
    assert agent_requests(server, ESCALATION) == []  # the handler ran, not the agent's model
    assert "Tranqui" not in turn.reply
    assert turn.trace()["steps"][0]["source"] == "signals"


def test_a_model_that_asks_only_another_agent_gets_the_emergency_step_first(
    cast: Cast, org: Organisation, conversation: Conversation, server: ScriptedServer
) -> None:
    server.add(
        tool_calls([call("financial", "cuánto nos debe el consorcio", intent="payment_status")]),
        when=ORCHESTRATOR,
    )
    server.add(scripted.text("El consorcio no debe nada."), when=FINANCIAL)

    turn = ask(cast, conversation, GAS_AND_DEBT)

    assert_one_urgent_ticket(org, turn)
    runs = AgentRun.objects.filter(turn_id=turn.result.turn_id).order_by("pk")
    assert [(r.agent, r.intent) for r in runs] == [
        ("escalation", "emergency"),
        ("financial", "payment_status"),
    ]
    assert "El consorcio no debe nada." in turn.reply


def test_the_models_own_escalation_calls_fold_into_the_one_ticket(
    cast: Cast, org: Organisation, conversation: Conversation, server: ScriptedServer
) -> None:
    server.add(
        tool_calls(
            [
                call("escalation", GAS, 2, intent="emergency"),
                call("escalation", "vengan ya", 2, intent="escalate"),
            ]
        ),
        when=ORCHESTRATOR,
    )
    # Were the escalation agent's model asked, it would open a ticket of its own.
    opens = tool_calls(
        [("ticket_create", {"reason": "emergency", "summary": "gas", "priority": "urgent"})]
    )
    server.add(opens, when=ESCALATION, times=None)

    turn = ask(cast, conversation, GAS)

    assert_one_urgent_ticket(org, turn)
    assert AgentRun.objects.filter(turn_id=turn.result.turn_id).count() == 1


def test_a_direct_line_to_the_escalation_agent_runs_the_emergency_handler_too(
    cast: Cast, org: Organisation, conversation: Conversation, server: ScriptedServer
) -> None:
    server.add(scripted.text("Ya aviso."), when=ESCALATION, times=None)

    turn = ask(cast, conversation, f"#escalation {GAS}")

    ticket = assert_one_urgent_ticket(org, turn)
    assert "#escalation" not in ticket.summary
    assert server.requests == []


def test_hybrid_asks_the_model_below_a_gate_and_still_opens_the_ticket(
    cast: Cast, org: Organisation, conversation: Conversation, server: ScriptedServer
) -> None:
    org.engine = Organisation.Engine.HYBRID
    org.save(update_fields=["engine"])
    # The debt half is read at 0.99: above a gate this strict it is not, so the model is asked.
    Agent.objects.filter(organisation=org, name="financial").update(min_confidence=0.999)
    server.add(scripted.text("¡Salgan del edificio ya!"), when=ORCHESTRATOR)
    server.add(scripted.text("Ya lo veo."), when=ESCALATION, times=None)
    server.add(scripted.text("El consorcio debe 10.000."), when=FINANCIAL)

    turn = ask(cast, conversation, GAS_AND_DEBT)

    assert len(agent_requests(server, ORCHESTRATOR)) == 1
    assert turn.trace()["routed_by"] == "model"
    assert_one_urgent_ticket(org, turn)
    assert agent_requests(server, ESCALATION) == []


def test_hybrid_without_the_model_opens_the_ticket_from_the_embedded_reading(
    cast: Cast, org: Organisation, conversation: Conversation, server: ScriptedServer
) -> None:
    org.engine = Organisation.Engine.HYBRID
    org.save(update_fields=["engine"])

    turn = ask(cast, conversation, GAS)

    assert server.requests == []
    assert turn.trace()["routed_by"] == "embedded"
    assert_one_urgent_ticket(org, turn)


def test_when_the_orchestrator_model_fails_the_embedded_chain_opens_the_ticket(
    cast: Cast, org: Organisation, conversation: Conversation, server: ScriptedServer
) -> None:
    server.add(scripted.status(500), when=ORCHESTRATOR, times=None)

    turn = ask(cast, conversation, GAS)

    assert turn.trace()["fallback"]["stage"] == "orchestrator"
    assert_one_urgent_ticket(org, turn)


# --- retract ----------------------------------------------------------------------------------

HOURS = "¿en qué horario atienden?"


def retracts(turn: Turn) -> list[dict[str, Any]]:
    return [e for e in turn.events if e["type"] == "retract"]


def replayed(cast: Cast, conversation: Conversation, after: int) -> list[dict[str, Any]]:
    """What a socket that reconnects with `?after=` gets, up to the turn's `completed`."""

    async def collect() -> list[dict[str, Any]]:
        socket = await _open(cast.operator, conversation.pk, after=after)
        events = []
        while not events or events[-1]["type"] != "completed":
            events.append(await _receive(socket, timeout=10))
        await socket.disconnect()
        return events

    return async_to_sync(collect)()


def test_an_agents_text_streamed_before_its_model_broke_is_retracted_before_the_fallback(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    server.add(tool_calls([call("general", HOURS, intent="hours")]), when=ORCHESTRATOR)
    broken = scripted.drop_after(scripted.text("Abrimos siempre, las 24", chunk_size=5), 2)
    server.add(broken, when=GENERAL)
    before = eventlog.last_seq(conversation.pk)

    turn = ask(cast, conversation, HOURS)

    (retract,) = retracts(turn)
    assert (retract["agent"], retract["reason"]) == ("general", "dropped")
    position = turn.events.index(retract)
    streamed = "".join(e["text"] for e in turn.events[:position] if e["type"] == "text")
    after = "".join(e["text"] for e in turn.events[position:] if e["type"] == "text")
    assert streamed == "Abrimos si"  # what the model wrote before the stream broke
    assert "Abrimos si" not in turn.reply and "18" in turn.reply  # the handler's hours
    assert after.strip() == turn.reply
    # The log keeps it, so a client that reconnects replays it in its place.
    assert (
        ConversationEvent.objects.filter(turn_id=turn.result.turn_id, type="retract").count() == 1
    )
    again = replayed(cast, conversation, before)
    assert [e for e in again if e["type"] == "retract"] == [retract]
    assert [e["type"] for e in again if e["type"] != "accepted"] == [e["type"] for e in turn.events]


def test_a_preamble_streamed_before_the_orchestrator_broke_is_retracted(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    dropped = scripted.drop_after(
        tool_calls([call("general", HOURS)], preamble="Ya te digo", chunk_size=4), 2
    )
    server.add(dropped, when=ORCHESTRATOR, times=None)

    turn = ask(cast, conversation, HOURS)

    (retract,) = retracts(turn)
    assert (retract["agent"], retract["reason"]) == ("", "dropped")
    position = turn.events.index(retract)
    # Streamed live in two chunks, logged as one (copilot/turnlog.py folds a speaker's text).
    assert [e["text"] for e in turn.events[:position] if e["type"] == "text"] == ["Ya te di"]
    assert turn.trace()["fallback"]["kind"] == "dropped"
    assert "18" in turn.reply and "Ya te" not in turn.reply


def test_nothing_is_retracted_when_the_model_failed_before_writing(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    server.add(scripted.status(500), when=ORCHESTRATOR, times=None)

    turn = ask(cast, conversation, HOURS)

    assert turn.trace()["fallback"]["stage"] == "orchestrator"
    assert retracts(turn) == []


def test_an_answer_the_orchestrator_gave_itself_is_retracted_for_the_agents(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    server.add(scripted.text("Abrimos de 7 a 23, todos los días."), when=ORCHESTRATOR)
    server.add(scripted.text("Atendemos de lunes a viernes de 8 a 18."), when=GENERAL)

    turn = ask(cast, conversation, HOURS)

    (retract,) = retracts(turn)
    assert (retract["agent"], retract["reason"]) == ("", "not_small_talk")
    first_agent_text = turn.position(lambda e: e["type"] == "text" and e.get("agent"))
    assert turn.events.index(retract) < first_agent_text
    assert turn.reply == "Atendemos de lunes a viernes de 8 a 18."


# --- courtesy below the gate ------------------------------------------------------------------


@pytest.fixture
def strict_general(org: Organisation) -> Organisation:
    """Hybrid, with the general agent's gate above how sure the reading of "ok genial" is
    (a farewell at 0.59)."""
    org.engine = Organisation.Engine.HYBRID
    org.save(update_fields=["engine"])
    Agent.objects.filter(organisation=org, name="general").update(min_confidence=0.9)
    return org


def test_hybrid_asks_the_model_about_a_farewell_read_below_its_gate(
    cast: Cast, strict_general: Organisation, conversation: Conversation, server: ScriptedServer
) -> None:
    server.add(scripted.text("¡De nada! Acá estoy para lo que necesites."), when=ORCHESTRATOR)

    turn = ask(cast, conversation, "ok genial")

    (request,) = agent_requests(server, ORCHESTRATOR)
    assert request["messages"][-1]["content"] == "ok genial"
    assert turn.trace()["routed_by"] == "model"
    assert turn.reply == "¡De nada! Acá estoy para lo que necesites."


def test_a_farewell_below_its_gate_gets_a_small_talk_answer_when_the_model_fails(
    cast: Cast, strict_general: Organisation, conversation: Conversation, server: ScriptedServer
) -> None:
    server.add(scripted.status(500), when=ORCHESTRATOR, times=None)

    turn = ask(cast, conversation, "ok genial")

    assert len(agent_requests(server, ORCHESTRATOR)) >= 1
    assert turn.trace()["fallback"]["stage"] == "orchestrator"
    assert turn.reply == "¡De nada! Cualquier cosa, acá estoy."
    (step,) = turn.trace()["steps"]
    assert (step["intent"], step["source"], step["yielded"]) == ("farewell", "courtesy", False)
    assert turn.trace()["understanding"]["tasks"][0]["confidence"] < 0.9  # the reading as it was
