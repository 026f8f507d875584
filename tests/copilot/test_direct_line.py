"""The direct line (T2): `#agent` alone opens a line that stays open across turns until `#salir`
/ `#exit`; what goes through it reaches the agent verbatim and its answer comes back verbatim;
strict lines add nothing, guarded ones add separate, attributed, traced notes."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from agents.models import Agent
from copilot.models import AgentRun, Conversation, Message
from nlu.values import Directive
from tests.conftest import Cast
from tests.copilot.conftest import ScriptedRouter, job_under_discussion, task
from tests.copilot.turns import Answered, answer

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("registry", "handlers"),
    pytest.mark.usefixtures("dispatched"),  # turns run by the test itself
]


@pytest.fixture
def scripted(router: ScriptedRouter) -> ScriptedRouter:
    router.script["#clientes"] = Directive("clientes", "")
    router.script["#agenda"] = Directive("agenda", "")
    router.script["#salir"] = Directive("salir", "")
    router.script["EN #exit"] = Directive("exit", "")
    router.script["lo de Juan"] = [
        task("book_job", 0.8, candidates=[("search_customer", 0.2)], customer="Juan")
    ]
    router.script["cancelalo"] = [task("cancel_job", 0.9)]
    return router


def _say(conversation: Conversation, cast: Cast, text: str) -> Answered:
    turn = answer(conversation, cast.operator.pk, text)
    assert turn.result.ok, turn.result
    conversation.refresh_from_db()
    return turn


def _line_events(turn: Answered) -> list[dict[str, Any]]:
    return [e for e in turn.events if e["type"] == "direct_line"]


def _agents(turn: Answered) -> list[str]:
    return list(
        AgentRun.objects.filter(turn_id=turn.result.turn_id).values_list("agent", flat=True)
    )


def test_a_bare_name_opens_a_sticky_line_that_carries_every_message_verbatim(
    cast: Cast, conversation: Conversation, scripted: ScriptedRouter
) -> None:
    opened = _say(conversation, cast, "#clientes")
    assert opened.result.text.startswith("Línea directa con Clientes abierta")
    assert "#salir" in opened.result.text
    assert conversation.state["direct_line"] == "customer"
    assert [(e["agent"], e["label"]) for e in _line_events(opened)] == [("customer", "Clientes")]
    assert _agents(opened) == []

    # Read alone, "lo de Juan" is a booking; on the open line it goes to Clientes, as is.
    first = _say(conversation, cast, "lo de Juan")
    second = _say(conversation, cast, "lo de Juan")
    for turn in (first, second):
        assert _agents(turn) == ["customer"]
        assert turn.result.text == "Encontré 0 clientes."  # the agent's block, byte for byte
        stored = Message.objects.get(pk=turn.result.assistant_message_id)
        assert (stored.agent, stored.text) == ("customer", "Encontré 0 clientes.")
        assert stored.trace["direct_line"]["sticky"] is True
        assert {e["agent"] for e in turn.events if e["type"] == "text"} == {"customer"}
    assert set(scripted.seen[1:]) == {"lo de Juan"}  # read as written, nothing added

    closed = _say(conversation, cast, "#salir")
    assert closed.result.text == "Línea directa con Clientes cerrada. Volviste al copiloto."
    assert "direct_line" not in conversation.state
    assert [(e["agent"], e["label"]) for e in _line_events(closed)] == [("", "")]
    back = _say(conversation, cast, "lo de Juan")
    assert _agents(back) == ["scheduling"]  # understood on its own again


def test_the_exit_is_deterministic_in_english_and_says_when_nothing_was_open(
    cast: Cast, conversation: Conversation, scripted: ScriptedRouter
) -> None:
    nothing = _say(conversation, cast, "#salir")
    assert nothing.result.text.startswith("No hay una línea directa abierta")
    assert _line_events(nothing) == []
    _say(conversation, cast, "#agenda")
    assert conversation.state["direct_line"] == "scheduling"
    closed = _say(conversation, cast, "EN #exit")
    assert closed.result.text == "Direct line to Scheduling closed. You are back with the copilot."
    assert "direct_line" not in conversation.state


def test_a_one_off_to_another_agent_leaves_the_line_open_and_a_bare_name_moves_it(
    cast: Cast, conversation: Conversation, scripted: ScriptedRouter
) -> None:
    scripted.script["#agenda lo de Juan"] = Directive("agenda", "lo de Juan")
    _say(conversation, cast, "#clientes")
    one_off = _say(conversation, cast, "#agenda lo de Juan")
    assert _agents(one_off) == ["scheduling"]
    assert conversation.state["direct_line"] == "customer"
    _say(conversation, cast, "#agenda")
    assert conversation.state["direct_line"] == "scheduling"


def test_a_line_to_an_agent_that_was_disabled_is_not_followed(
    cast: Cast, conversation: Conversation, scripted: ScriptedRouter
) -> None:
    _say(conversation, cast, "#clientes")
    Agent.objects.filter(organisation=cast.org, name="customer").update(enabled=False)
    turn = _say(conversation, cast, "lo de Juan")
    assert _agents(turn) == ["scheduling"]
    assert "direct_line" not in conversation.state  # closed, not left to reopen later
    assert [(e["agent"], e["label"]) for e in _line_events(turn)] == [("", "")]  # indicator off


@pytest.mark.parametrize(("policy", "separate_note"), [("strict", False), ("guarded", True)])
def test_strict_adds_nothing_and_guarded_adds_a_separate_traced_note(
    cast: Cast,
    conversation: Conversation,
    scripted: ScriptedRouter,
    policy: str,
    separate_note: bool,
) -> None:
    Agent.objects.filter(organisation=cast.org, name="scheduling").update(direct_line=policy)
    job_under_discussion(cast, conversation, "Claudia Bianchi")
    _say(conversation, cast, "#agenda")
    turn = _say(conversation, cast, "cancelalo")  # held for a manager: the agent doesn't say #

    stored = list(
        Message.objects.filter(conversation=conversation, role="assistant").order_by("pk")
    )[-2:]
    block = "La cancelación necesita aprobación."
    trace = stored[-1].trace["direct_line"]
    if separate_note:
        agent_message, note = stored
        assert (agent_message.agent, agent_message.text) == ("scheduling", block)
        assert note.agent == "" and "#" in note.text and note.text != block
        assert trace["interventions"] == [note.text]
        assert turn.result.text == f"{block}\n\n{note.text}"
        texts = [e for e in turn.events if e["type"] == "text"]
        assert {e.get("agent", "") for e in texts} == {"scheduling", ""}
    else:
        assert (stored[-1].agent, stored[-1].text) == ("scheduling", block)
        assert turn.result.text == block and trace["interventions"] == []
    assert trace["policy"] == policy and trace["agent"] == "scheduling"


def test_the_panel_shows_the_open_line_and_pills_that_open_one(
    cast: Cast, conversation: Conversation, scripted: ScriptedRouter
) -> None:
    client = Client()
    client.force_login(cast.operator)
    page = client.get(f"/chat/{conversation.pk}/").content.decode()
    assert 'id="direct-line"' in page and 'data-agent=""' in page
    _say(conversation, cast, "lo de Juan")
    _say(conversation, cast, "#clientes")
    page = client.get(f"/chat/{conversation.pk}/").content.decode()
    assert 'data-agent="customer"' in page and "<strong data-direct-label>Clientes</strong>" in page
    assert "data-direct-close" in page and 'data-exit="#salir"' in page
    assert '<button type="button" class="pill' in page and 'data-agent="scheduling"' in page

    # A supervisor reads the open line but gets no close button.
    supervisor = Client()
    supervisor.force_login(cast.manager)
    read_only = supervisor.get(f"/chat/{conversation.pk}/").content.decode()
    assert 'data-agent="customer"' in read_only and "data-direct-close" not in read_only
