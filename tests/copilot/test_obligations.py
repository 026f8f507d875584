"""Obligations (T3) on the embedded engine: an agent's rule or the operator's ticks make a turn
consult an agent the reading left out (its step is added); one it still could not consult is
marked failed in the trace and said to the operator."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agents.models import Agent
from copilot import runner
from copilot.consumers import parse_frame
from copilot.intake import accept_message
from copilot.models import AgentRun, Conversation, Message
from copilot.orchestration.obligations import mentions, obligations_for
from tests.conftest import Cast
from tests.copilot.conftest import ScriptedRouter, task
from tests.copilot.turns import answer

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("registry", "handlers"),
    pytest.mark.usefixtures("dispatched"),  # turns run by the test itself
]

BOOKING = "agendá lo de Juan para el martes, que es el vecino del fondo"


@pytest.fixture
def scripted(router: ScriptedRouter) -> ScriptedRouter:
    router.script[BOOKING] = [
        task("book_job", 0.9, candidates=[("search_customer", 0.1)], customer="Juan")
    ]
    return router


def _agents(turn_id: str) -> list[str]:
    return list(
        AgentRun.objects.filter(turn_id=turn_id).order_by("pk").values_list("agent", flat=True)
    )


def test_phrases_match_whole_words_without_accents_or_case() -> None:
    assert mentions("¿Cuánta PLATA debe?", ["plata"]) == "plata"
    assert mentions("la plataforma", ["plata"]) == ""
    assert mentions("se le venció la factura", ["vencio la factura"]) == "vencio la factura"


def test_sources_are_kept_once_each_in_order(cast: Cast, registry: dict[str, Agent]) -> None:
    registry["customer"].consult_when = ["vecino"]
    found = obligations_for(
        BOOKING, registry, directive_agent="scheduling", ticked=["customer", "nadie"]
    )
    assert [(o.agent, o.source, o.asked) for o in found] == [
        ("scheduling", "directive", "scheduling"),
        ("customer", "operator", "customer"),
        ("", "operator", "nadie"),
    ]


def test_an_agents_rule_adds_its_step_when_the_reading_left_it_out(
    cast: Cast, conversation: Conversation, scripted: ScriptedRouter, registry: dict[str, Agent]
) -> None:
    Agent.objects.filter(pk=registry["customer"].pk).update(consult_when=["vecino"])
    turn = answer(conversation, cast.operator.pk, BOOKING)
    assert _agents(turn.result.turn_id) == ["scheduling", "customer"]
    trace = Message.objects.get(pk=turn.result.assistant_message_id).trace
    assert trace["obligations"] == [
        {"agent": "customer", "source": "rule", "asked": "vecino", "met": True}
    ]
    assert trace["obligations_failed"] is False
    assert "tenía que consultar" not in turn.result.text


def test_without_a_rule_nothing_is_added(
    cast: Cast, conversation: Conversation, scripted: ScriptedRouter
) -> None:
    turn = answer(conversation, cast.operator.pk, BOOKING)
    assert _agents(turn.result.turn_id) == ["scheduling"]
    assert "obligations" not in Message.objects.get(pk=turn.result.assistant_message_id).trace


def test_agents_the_operator_ticked_are_consulted_and_an_unknown_one_is_reported(
    cast: Cast, conversation: Conversation, scripted: ScriptedRouter
) -> None:
    accepted = accept_message(
        conversation=conversation, user_id=cast.operator.pk, text=BOOKING,
        consult=["customer", "contabilidad"],
    )  # fmt: skip
    asked = Message.objects.get(pk=accepted.message_id)
    assert asked.trace == {"consult": ["customer", "contabilidad"]}  # stored with the message
    [result] = runner.drain(cast.org.pk, conversation.pk).results
    assert _agents(result.turn_id) == ["scheduling", "customer"]
    trace = Message.objects.get(pk=result.assistant_message_id).trace
    assert [(o["agent"], o["source"], o["met"]) for o in trace["obligations"]] == [
        ("customer", "operator", True),
        ("", "operator", False),
    ]
    assert trace["obligations_failed"] is True
    assert result.text.endswith(
        "Atención: este pedido tenía que consultar a contabilidad y no se pudo; revisalo antes "
        "de seguir."
    )


def test_a_required_agent_that_is_disabled_is_not_consulted_and_the_turn_says_so(
    cast: Cast, conversation: Conversation, scripted: ScriptedRouter, registry: dict[str, Agent]
) -> None:
    Agent.objects.filter(pk=registry["customer"].pk).update(consult_when=["vecino"])
    accept_message(
        conversation=conversation, user_id=cast.operator.pk, text=BOOKING, consult=["fleet"]
    )
    Agent.objects.filter(pk=registry["fleet"].pk).update(enabled=False)
    [result] = runner.drain(cast.org.pk, conversation.pk).results
    assert "fleet" not in _agents(result.turn_id)
    assert "tenía que consultar a fleet" in result.text


@pytest.mark.parametrize(
    "consult",
    [
        "finanzas",  # not a list
        ["financial"] * 9,  # too many
        ["Finanzas con espacios"],
        [{"agent": "financial"}],
        ["x" * 41],
    ],
)
def test_a_malformed_consult_list_refuses_the_frame(consult: Any) -> None:
    frame = json.dumps({"type": "message", "text": "hola", "consult": consult})
    parsed, problem = parse_frame(frame, None)
    assert parsed is None and problem is not None and problem[0] == "malformed"


def test_a_consult_list_is_read_deduplicated() -> None:
    frame = json.dumps({"type": "message", "text": "hola", "consult": ["financial", "financial"]})
    parsed, problem = parse_frame(frame, None)
    assert problem is None and parsed == ("hola", "", ["financial"])


def test_an_agent_consulted_without_a_reading_of_its_own_is_asked_something_that_writes_nothing(
    cast: Cast, conversation: Conversation, scripted: ScriptedRouter
) -> None:
    accept_message(
        conversation=conversation, user_id=cast.operator.pk, text=BOOKING, consult=["financial"]
    )
    [result] = runner.drain(cast.org.pk, conversation.pk).results
    runs = AgentRun.objects.filter(turn_id=result.turn_id, agent="financial")
    assert [run.intent for run in runs] == ["payment_status"]  # not a quote or an invoice


def test_an_agent_that_could_only_act_is_not_made_to_act_by_being_consulted(
    cast: Cast, conversation: Conversation, scripted: ScriptedRouter
) -> None:
    # Every fleet intent writes (assign a vehicle, dispatch, reschedule…): ticking Flota on a
    # booking must not assign anything; it is reported as not consulted.
    accept_message(
        conversation=conversation, user_id=cast.operator.pk, text=BOOKING, consult=["fleet"]
    )
    [result] = runner.drain(cast.org.pk, conversation.pk).results
    assert "fleet" not in _agents(result.turn_id)
    assert "tenía que consultar a Flota" in result.text
