"""Answers that read well (issue 16): Markdown rendered and sanitised on the server, record chips
from the tool results' structured records, one translated "what I did" block that a reload shows
exactly as the live view did, emergencies as alerts that reach the managers live."""

from __future__ import annotations

import asyncio
import json
import re
from html.parser import HTMLParser
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.test import Client
from django.urls import reverse

from agents.base import HANDLERS
from agents.escalation import agent as escalation_agent
from agents.models import Agent
from agents.registry import ToolResult
from agents.step_lines import records_of, tool_line
from approvals import live
from business.models import EscalationTicket
from capataz.asgi import application
from copilot import eventlog
from copilot.answers import build_steps, render_markdown, steps_for_turn
from copilot.models import Conversation, ConversationEvent, Message
from copilot.services import conversation_create
from copilot.templatetags.answer_tags import steps_need_eyes
from tests import factories
from tests.conftest import Cast
from tests.copilot.conftest import ScriptedRouter, add_intent, task
from tests.copilot.test_consumer import HOST, ORIGIN, _session_cookie
from tests.copilot.turns import answer
from tests.panel_i18n import spanish_catalogue  # noqa: F401 - the fixture
from tests.websocket import WebsocketCommunicator

pytestmark = pytest.mark.usefixtures("spanish_catalogue")


# --- Markdown ----------------------------------------------------------------------------------


def test_lists_bold_and_tables_render_as_html() -> None:
    html = render_markdown(
        "Tenés **2 trabajos**:\n\n- #12 lunes\n- #13 martes\n\n"
        "| día | hora |\n|---|---|\n| lunes | 10:00 |"
    )
    assert "<strong>2 trabajos</strong>" in html
    assert "<ul>" in html and "<li>#12 lunes</li>" in html
    assert "<table>" in html and "<td>lunes</td>" in html


@pytest.mark.parametrize(
    "text",
    [
        "<script>alert(1)</script> hola",
        '<img src=x onerror="alert(1)"> hola',
        "[abrir](javascript:alert(1)) hola",
        '<a href="javascript:alert(1)">abrir</a> hola',
        "[x](JaVaScRiPt:alert(1)) hola",
    ],
)
def test_scripts_handlers_and_javascript_links_never_reach_the_page(text: str) -> None:
    html = render_markdown(text)
    tags = _Tags()
    tags.feed(html)
    assert not {"script", "img"} & {tag for tag, _ in tags.seen}  # markup shows as text at most
    attributes = [(name, value or "") for _, attrs in tags.seen for name, value in attrs]
    assert not [name for name, _ in attributes if name.startswith("on")]
    assert not [v for name, v in attributes if name == "href" and "javascript" in v.lower()]
    assert "hola" in html


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.append((tag, attrs))


def test_a_safe_link_keeps_its_address_and_a_no_opener_rel() -> None:
    html = render_markdown("[manual](https://example.com/m)")
    assert 'href="https://example.com/m"' in html and "noopener" in html


# --- records and lines from structured results ------------------------------------------------


def test_records_come_from_the_structured_result_not_from_its_words() -> None:
    result = ToolResult(
        ok=True,
        data={
            "job": {"id": 12, "customer_id": 3, "customer": "Gómez"},
            "customer": {"id": 3, "name": "Gómez"},
        },
        summary="job #999 booked, see quote P-000027",  # words name other records: ignored
    )
    refs = records_of("job_book", result)
    assert {(r["kind"], r["id"]) for r in refs} == {("job", 12), ("customer", 3)}


def test_a_search_names_its_hits_and_a_customers_file_only_the_customer() -> None:
    hits = [{"id": n, "name": f"Gómez {n}"} for n in range(1, 9)]
    found = records_of("customers_find", ToolResult(ok=True, data={"customers": hits}, summary=""))
    assert [r["id"] for r in found] == [1, 2, 3, 4, 5]  # the first few, not all eight
    file = ToolResult(
        ok=True,
        data={
            "customer": {"id": 3, "name": "Gómez"},
            "jobs": [{"id": 40}],
            "invoices": [{"id": 2}],
        },
        summary="",
    )
    assert records_of("customer_history", file) == [{"kind": "customer", "id": 3, "label": "Gómez"}]
    owed = ToolResult(
        ok=True,
        data={
            "customer": {"id": 3, "name": "Gómez"},
            "invoices": [{"id": 2, "letter": "A", "number": "0001-00000002"}],
        },
        summary="",
    )
    assert {"kind": "invoice", "id": 2, "label": "A 0001-00000002"} in records_of(
        "payment_status", owed
    )


def test_a_held_call_names_its_approval() -> None:
    held = ToolResult(ok=True, data={"held": True, "pending_approval_id": 7}, summary="")
    assert records_of("job_cancel", held) == [{"kind": "approval", "id": 7, "label": "#7"}]
    assert tool_line("job_cancel", held, "en") == "Asked a manager to approve it (#7)"
    assert tool_line("job_cancel", held, "es") == "Le pedí la aprobación a un gerente (#7)"


@pytest.mark.parametrize(
    ("tool", "data", "es", "en"),
    [
        ("customers_find", {"customers": [{"id": 1}]}, "Encontré 1 cliente", "Found 1 customer"),
        ("customers_find", {"customers": []}, "Encontré 0 clientes", "Found 0 customers"),
        (
            "payment_status",
            {"invoices": [{"id": 1}], "total_owed": "35600.00"},
            "Revisé los pagos: 1 factura impaga, debe $ 35600.00",
            "Checked payments: 1 unpaid invoice, $ 35600.00 owed",
        ),
        (
            "jobs_redistribute",
            {"dry_run": True, "moved": [{"job_id": 4}], "not_moved": []},
            "Plan: se movería 1 trabajo",
            "Planned: 1 job would move",
        ),
        (
            "customer_create",
            {"customer": {"id": 54, "name": "Rocío Almada"}},
            "Di de alta al cliente Rocío Almada",
            "Created customer Rocío Almada",
        ),
    ],
)
def test_each_line_is_written_from_a_template_in_the_operators_language(
    tool: str, data: dict[str, Any], es: str, en: str
) -> None:
    result = ToolResult(ok=True, data=data, summary="1 invoices, 35600.00 owed")
    assert tool_line(tool, result, "es") == es
    assert tool_line(tool, result, "en") == en


def test_failures_and_refusals_read_as_sentences_not_debug_lines() -> None:
    missing = ToolResult(ok=False, data={}, summary="", error="vehicle AB123CD not found")
    refused = ToolResult(ok=False, data={}, summary="", error="tool payment_status not enabled")
    assert tool_line("vehicle_assign", missing, "es") == "No pude asignar un vehículo"
    assert tool_line("vehicle_assign", missing, "en") == "Could not assign a vehicle"
    spanish = tool_line("payment_status", refused, "es")
    assert spanish.startswith("Este agente no puede") and "payment_status" not in spanish


def test_steps_group_tool_calls_under_their_agent_with_status_and_durations() -> None:
    events = [
        {"type": "agent_start", "agent": "customer", "label": "Clientes", "intent": "x"},
        {"type": "tool_start", "agent": "customer", "tool": "customers_find"},
        {
            "type": "tool_result", "agent": "customer", "tool": "customers_find", "ok": True,
            "line": "Encontré 1 cliente", "records": [{"kind": "customer", "id": 3, "label": "G"}],
        },
        {"type": "tool_end", "agent": "customer", "tool": "customers_find", "latency_ms": 4.5},
        {"type": "approval_requested", "agent": "customer", "approval_id": 9, "summary": "s"},
        {"type": "agent_end", "agent": "customer", "success": True, "latency_ms": 9.0},
    ]  # fmt: skip
    steps = build_steps(events)
    (agent,) = steps["agents"]
    assert agent["status"] == "ok" and agent["ms"] == 9.0
    assert agent["tools"] == [
        {"tool": "customers_find", "line": "Encontré 1 cliente", "ok": True, "ms": 4.5,
         "records": [{"kind": "customer", "id": 3, "label": "G"}]},
    ]  # fmt: skip
    assert [(r["kind"], r["id"]) for r in steps["records"]] == [("approval", 9), ("customer", 3)]
    assert steps["urgency"] == ""
    assert steps_need_eyes(steps)  # a held approval: the block opens by itself
    assert not steps_need_eyes(build_steps(events[:4]))


# --- a real turn: live events, stored steps, the page and the live fragment -----------------------

turns = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("registry", "handlers")]


def _answer_html(page: str) -> list[str]:
    pattern = r'<div class="answer[^"]*" data-answer="\d+">.*?</details>\s*</div>'
    return re.findall(pattern, page, re.S)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("registry", "handlers")
@pytest.mark.parametrize(
    ("text", "screen", "line", "what", "agent"),
    [("buscá a Juan", "es-ar", "Encontré 1 cliente", "Qué hice", "Clientes"),
     ("EN find Juan", "en", "Found 1 customer", "What I did", "Customers"),
     # An English message in a Spanish panel: its lines are English, the screen's words and the
     # agent's name Spanish.
     ("EN find Juan", "es-ar", "Found 1 customer", "Qué hice", "Clientes")],
)  # fmt: skip
def test_a_reload_shows_the_steps_and_chips_the_live_view_was_sent(
    client: Client, cast: Cast, conversation: Conversation, router: ScriptedRouter,
    text: str, screen: str, line: str, what: str, agent: str,
) -> None:  # fmt: skip
    juan = factories.make_customer(cast.org, "Juan Pérez")
    router.script[text] = [task("search_customer", 0.9, customer="Juan")]

    turn = answer(conversation, cast.operator.pk, text)

    result = next(e for e in turn.events if e["type"] == "tool_result")
    assert result["line"] == line  # live: the event carries the translated line
    assert result["records"] == [{"kind": "customer", "id": juan.pk, "label": "Juan Pérez"}]
    reply = Message.objects.get(pk=turn.result.assistant_message_id)
    assert reply.trace["did"]["agents"][0]["tools"][0]["line"] == line

    client.force_login(cast.operator)
    ui = {"HTTP_ACCEPT_LANGUAGE": screen}
    page = client.get(reverse("chat_detail", args=[conversation.pk]), **ui).content.decode()
    fragment = client.get(
        reverse("chat_answer", args=[conversation.pk, turn.result.turn_id]), **ui
    ).content.decode()
    (on_page,) = _answer_html(page)
    assert on_page.strip() == fragment.strip()  # the live swap is what the reload renders
    assert line in on_page and what in on_page
    assert f'<span class="step-label">{agent}</span>' in on_page
    labels = re.search(r'<script id="agent-labels" type="application/json">(.*?)</script>', page)
    assert labels is not None and json.loads(labels.group(1))["customer"] == agent  # live steps
    assert f'href="{reverse("customer_detail", args=[juan.pk])}"' in on_page
    assert page.count('class="msg-consulted"') == 1  # one set of agent pills
    ConversationEvent.objects.filter(conversation=conversation).delete()  # past the log's days
    again = client.get(reverse("chat_detail", args=[conversation.pk]), **ui).content.decode()
    assert _answer_html(again) == [on_page]


@pytest.mark.django_db
def test_another_organisation_cannot_read_a_turns_answer(client: Client, cast: Cast) -> None:
    conversation = conversation_create(organisation=cast.org, user=cast.operator, channel="panel")
    Message.objects.create(
        organisation=cast.org, conversation=conversation, role="assistant", text="**hola**",
        trace={"turn_id": "t-1"},
    )  # fmt: skip
    url = reverse("chat_answer", args=[conversation.pk, "t-1"])
    client.force_login(cast.outsider)  # an admin, of another organisation
    assert client.get(url).status_code == 404
    client.force_login(cast.operator)
    own = client.get(url)
    assert own.status_code == 200 and "<strong>hola</strong>" in own.content.decode()
    assert client.get(reverse("chat_answer", args=[conversation.pk, "t-2"])).status_code == 404


# --- urgency ---------------------------------------------------------------------------------


@pytest.fixture
def real_emergency(registry: dict[str, Agent], handlers: dict[str, Any]) -> None:
    """The escalation agent's own emergency handler, with its tools."""
    HANDLERS["emergency"] = escalation_agent.emergency
    Agent.objects.filter(pk=registry["escalation"].pk).update(
        tools=["ticket_create", "customers_find", "customer_history", "technicians_nearest"]
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("real_emergency")
def test_a_gas_leak_is_an_alert_with_its_ticket_and_the_managers_hear_it_live(
    client: Client, cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    factories.make_customer(cast.org, "Panadería La Espiga")
    text = "hay olor a gas en la Panadería La Espiga"
    router.script[text] = [task("emergency", 0.95, text, customer="Panadería La Espiga")]
    layer = get_channel_layer()
    assert layer is not None
    channel = asyncio.run(_join(layer, live.group_name(cast.org.pk)))

    turn = answer(conversation, cast.operator.pk, text)

    ticket = EscalationTicket.objects.get(organisation=cast.org)
    assert ticket.priority == "urgent"
    heard = asyncio.run(asyncio.wait_for(layer.receive(channel), 5))
    assert heard["type"] == live.EMERGENCY_MESSAGE and heard["ticket"] == ticket.pk
    assert heard["conversation"] == conversation.pk
    client.force_login(cast.operator)
    page = client.get(reverse("chat_detail", args=[conversation.pk])).content.decode()
    assert "answer-emergency" in page and 'data-testid="answer-alert"' in page
    assert f"#ticket-{ticket.pk}" in page
    alert = page.index('data-testid="answer-alert"')
    assert alert < page.index('class="msg-text msg-md"', alert)  # the alert before the text
    assert turn.result.ok


def _gas_cut_started(cast: Cast, registry: dict[str, Agent], *, first: bool) -> Any:
    """A conversation whose turn t-1 started an admin-added fleet intent `gas_cut`."""
    add_intent(registry["fleet"], name="gas_cut", examples_es="cortá el gas ya", first=first)
    conversation = conversation_create(organisation=cast.org, user=cast.operator, channel="panel")
    start = {"type": "agent_start", "agent": "fleet", "label": "Flota", "intent": "gas_cut"}
    ConversationEvent.objects.create(
        organisation=cast.org, conversation=conversation, seq=1, turn_id="t-1",
        type="agent_start", payload=start,
    )  # fmt: skip
    return conversation


@pytest.mark.django_db
@pytest.mark.parametrize(("first", "urgency"), [(True, "emergency"), (False, "")])
def test_a_step_of_an_intent_the_registry_says_opens_the_chain_is_an_alert(
    cast: Cast, registry: dict[str, Agent], first: bool, urgency: str
) -> None:
    """The registry's `first`, not the name "emergency": an intent an admin adds that opens
    every chain makes its answer an alert, whatever its agent; without the flag it does not."""
    conversation = _gas_cut_started(cast, registry, first=first)

    assert steps_for_turn(conversation.pk, "t-1")["urgency"] == urgency


@pytest.mark.django_db
def test_a_turn_that_holds_the_chain_openers_reads_its_steps_in_one_query(
    cast: Cast, registry: dict[str, Agent], django_assert_num_queries: Any
) -> None:
    """A message's turn passes the openers its reading already holds: the steps cost the event
    log's query only, and say the same as when the registry is read."""
    conversation = _gas_cut_started(cast, registry, first=True)
    read = steps_for_turn(conversation.pk, "t-1")

    with django_assert_num_queries(1):
        held = steps_for_turn(conversation.pk, "t-1", frozenset({"gas_cut"}))

    assert held == read and held["urgency"] == "emergency"


async def _join(layer: Any, group: str) -> str:
    channel = await layer.new_channel()
    await layer.group_add(group, channel)
    return str(channel)


@pytest.mark.django_db(transaction=True)
async def test_the_approvals_socket_passes_an_emergency_to_managers_only(cast: Cast) -> None:
    eventlog.use_loop(asyncio.get_running_loop())
    cookie = await sync_to_async(_session_cookie)(cast.manager)
    manager = WebsocketCommunicator(
        application, "/ws/approvals/",
        headers=[(b"host", HOST), (b"origin", ORIGIN), (b"cookie", cookie)],
    )  # fmt: skip
    assert (await manager.connect())[0]
    await manager.receive_from(10)  # the count on connect
    foreign_user = await sync_to_async(factories.make_user)(cast.other_org, "manager", "g_x")
    foreign_cookie = await sync_to_async(_session_cookie)(foreign_user)
    foreign = WebsocketCommunicator(
        application, "/ws/approvals/",
        headers=[(b"host", HOST), (b"origin", ORIGIN), (b"cookie", foreign_cookie)],
    )  # fmt: skip
    assert (await foreign.connect())[0]
    await foreign.receive_from(10)

    layer = get_channel_layer()
    assert layer is not None
    await layer.group_send(
        live.group_name(cast.org.pk),
        {"type": live.EMERGENCY_MESSAGE, "ticket": 5, "summary": "olor a gas", "conversation": 2},
    )

    frame = json.loads(await manager.receive_from(10))
    assert frame == {"type": "emergency", "ticket": 5, "summary": "olor a gas", "conversation": 2}
    assert await foreign.receive_nothing(timeout=0.5)
    await manager.disconnect()
    await foreign.disconnect()


@pytest.mark.django_db
def test_a_manager_page_carries_the_emergency_toasts_and_an_operator_page_does_not(
    client: Client, cast: Cast
) -> None:
    client.force_login(cast.manager)
    assert 'id="emergency-toasts"' in client.get(reverse("dashboard")).content.decode()
    client.force_login(cast.operator)
    assert 'id="emergency-toasts"' not in client.get(reverse("dashboard")).content.decode()


# --- the conversation's title, live ------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("registry", "handlers")
def test_the_first_message_names_the_conversation_in_its_accepted_event(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    first = answer(conversation, cast.operator.pk, "buscá a Juan")
    second = answer(conversation, cast.operator.pk, "hola")
    assert first.accepted["title"] == "buscá a Juan"
    assert second.accepted["title"] == "buscá a Juan"  # the first message named it, for good
