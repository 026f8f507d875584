"""The llm and hybrid engines end to end: a real turn (stored, then run: the graph, the sub-agents'
tool loops, the real registry tools over real rows) against a scripted OpenAI-compatible server
over real HTTP through the real `openai` SDK.

Requests are told apart by the tools they offer: the orchestrator's request offers `ask_<agent>`
tools, a sub-agent's request offers that agent's registry tools (scheduling: `slots_find`,
financial: `payment_status`, general: `org_info`).
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from agents.models import Agent
from agents.services import agents_install_defaults
from business.models import Job, Organisation
from copilot import router_cache, runner
from copilot.answering import TurnResult
from copilot.models import AgentRun, Conversation, Message
from copilot.selectors import get_conversation_for_org
from copilot.services import conversation_create
from llm.models import ModelCall
from testing import scripted
from testing.scripted import ScriptedServer, for_tool, tool_calls
from tests import factories
from tests.clock import BUENOS_AIRES
from tests.conftest import Cast
from tests.copilot.turns import answer

pytestmark = [
    pytest.mark.django_db(transaction=True),  # the turn and its concurrent steps run in threads
    pytest.mark.usefixtures("clock"),  # "mañana", "el jueves": the reference clock's days
]

ORCHESTRATOR = for_tool("ask_scheduling")
SCHEDULING = for_tool("slots_find")
FINANCIAL = for_tool("payment_status")
GENERAL = for_tool("org_info")


@pytest.fixture
def server(server: ScriptedServer, settings: Any) -> ScriptedServer:
    """The package's scripted model (tests/llm/conftest.py) with headroom for a loaded machine."""
    settings.OPENAI_TIMEOUT = 2.0  # the hang fault lasts 3 s
    settings.OPENAI_MAX_RETRIES = 1
    settings.OPENAI_RETRY_BUDGET = 0.5
    settings.COPILOT_BUFFER_FLUSH_DELAY_MS = 1
    return server


@pytest.fixture
def org(cast: Cast) -> Organisation:
    router_cache.forget()
    agents_install_defaults(organisation=cast.org)
    cast.org.engine = Organisation.Engine.LLM
    cast.org.save(update_fields=["engine"])
    return cast.org


@dataclass
class Turn:
    result: TurnResult
    events: list[dict[str, Any]]

    @property
    def reply(self) -> str:
        return self.result.text

    def texts(self, agent: str | None = None) -> list[str]:
        return [
            e["text"]
            for e in self.events
            if e["type"] == "text" and (agent is None or e.get("agent", "") == agent)
        ]

    def position(self, predicate: Any) -> int:
        return next(i for i, e in enumerate(self.events) if predicate(e))

    def trace(self) -> dict[str, Any]:
        message = Message.objects.get(pk=self.result.assistant_message_id)
        return message.trace


def ask(cast: Cast, conversation: Conversation, text: str) -> Turn:
    answered = answer(conversation, cast.operator.pk, text)
    return Turn(answered.result, answered.events)


@pytest.fixture
def conversation(org: Organisation, cast: Cast) -> Conversation:
    return conversation_create(organisation=org, user=cast.operator, channel="panel")


def call(agent: str, query: str, count: int = 1, intent: str | None = None) -> Any:
    arguments: dict[str, Any] = {"query": query, "intent_count": count}
    if intent:
        arguments["intent"] = intent
    return (f"ask_{agent}", arguments)


def agent_requests(server: ScriptedServer, matcher: Any) -> list[dict[str, Any]]:
    return [r for r in server.requests if matcher(r)]


def all_text(request: dict[str, Any]) -> str:
    return json.dumps(request.get("messages", []), ensure_ascii=False)


# --- preamble, single intent ------------------------------------------------------------------


def test_the_preamble_streams_before_the_agent_and_each_answer_is_its_own_message(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    text = "fijate qué turnos libres hay mañana a la mañana"
    server.add(
        tool_calls([call("scheduling", text, intent="check_availability")], preamble="Me fijo."),
        when=ORCHESTRATOR,
    )
    server.add(scripted.text("Mañana a las 9 está libre Carlos."), when=SCHEDULING)

    turn = ask(cast, conversation, text)

    first_preamble = turn.position(lambda e: e["type"] == "text" and not e.get("agent"))
    agent_start = turn.position(lambda e: e["type"] == "agent_start")
    first_agent_text = turn.position(lambda e: e["type"] == "text" and e.get("agent"))
    assert first_preamble < agent_start < first_agent_text
    assert "".join(turn.texts()) == turn.reply
    assert turn.reply == "Me fijo.\n\nMañana a las 9 está libre Carlos."
    stored = list(
        conversation.messages.filter(role="assistant").values_list("agent", "text").order_by("pk")
    )
    assert stored == [("", "Me fijo."), ("scheduling", "Mañana a las 9 está libre Carlos.")]
    assert turn.trace()["routed_by"] == "model"
    run = AgentRun.objects.get(turn_id=turn.result.turn_id)
    assert (run.agent, run.intent, run.success) == ("scheduling", "check_availability", True)
    assert run.tokens_in > 0 and run.tokens_out > 0
    assert ModelCall.objects.filter(turn_id=turn.result.turn_id).count() == 2
    usage = [e for e in turn.events if e["type"] == "usage"]
    assert usage and usage[0]["tokens_in"] >= run.tokens_in


def test_a_single_call_gets_the_users_exact_words(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    text = "che, ¿qué hay libre el martes para un service de split?"
    server.add(
        tool_calls([call("scheduling", "availability Tuesday split service")]), when=ORCHESTRATOR
    )
    server.add(scripted.text("El martes hay lugar a las 10."), when=SCHEDULING)

    ask(cast, conversation, text)

    (request,) = agent_requests(server, SCHEDULING)
    users = [m["content"] for m in request["messages"] if m["role"] == "user"]
    assert any(text in content for content in users)
    assert "availability Tuesday split service" not in all_text(request)


# --- mixed intent, concurrency ----------------------------------------------------------------


@pytest.mark.parametrize("slow", ["scheduling", "financial"])
def test_mixed_intent_runs_both_agents_and_streams_one_at_a_time(
    cast: Cast, conversation: Conversation, server: ScriptedServer, slow: str
) -> None:
    factories.make_customer(cast.org, name="Panadería La Espiga")
    text = "¿qué hay libre mañana? y decime cuánto debe Panadería La Espiga"
    server.add(
        tool_calls(
            [
                call("scheduling", "¿qué hay libre mañana?", 2, "check_availability"),
                call("financial", "cuánto debe Panadería La Espiga", 2, "payment_status"),
            ]
        ),
        when=ORCHESTRATOR,
    )
    answers = {
        "scheduling": "Mañana hay lugar a las 9 y a las 14.",
        "financial": "Panadería La Espiga no debe nada.",
    }
    delays = {slow: 0.03, ("financial" if slow == "scheduling" else "scheduling"): 0.0}
    server.add(
        scripted.text(answers["scheduling"], chunk_size=4, delay=delays["scheduling"]),
        when=SCHEDULING,
    )
    server.add(
        scripted.text(answers["financial"], chunk_size=4, delay=delays["financial"]),
        when=FINANCIAL,
    )

    turn = ask(cast, conversation, text)

    fast = "financial" if slow == "scheduling" else "scheduling"
    agents_in_order = [e["agent"] for e in turn.events if e["type"] == "text" and e.get("agent")]
    # The fast agent took the live slot; the slow one's text came after it, never interleaved.
    first_slow = agents_in_order.index(slow)
    assert set(agents_in_order[:first_slow]) == {fast}
    assert set(agents_in_order[first_slow:]) == {slow}
    assert turn.reply == f"{answers[fast]}\n\n{answers[slow]}"
    stored = list(
        conversation.messages.filter(role="assistant").values_list("agent", "text").order_by("pk")
    )
    assert stored == [(fast, answers[fast]), (slow, answers[slow])]
    assert {r.agent for r in AgentRun.objects.filter(turn_id=turn.result.turn_id)} == {
        "scheduling",
        "financial",
    }


def test_no_agent_sees_the_other_agents_part_of_the_turn(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    text = "¿qué hay libre mañana a las nueve? y además decime cuánto debe Ferretería Norte"
    server.add(
        tool_calls(
            [
                call("scheduling", "¿qué hay libre mañana a las nueve?", 2),
                call("financial", "decime cuánto debe Ferretería Norte", 2),
            ]
        ),
        when=ORCHESTRATOR,
    )
    server.add(scripted.text("A las nueve está libre Carlos."), when=SCHEDULING)
    server.add(scripted.text("Ferretería Norte debe 10.000."), when=FINANCIAL)

    ask(cast, conversation, text)

    (scheduling,) = agent_requests(server, SCHEDULING)
    (financial,) = agent_requests(server, FINANCIAL)
    assert "Ferretería" not in all_text(scheduling)
    assert "libre mañana" not in all_text(financial)
    assert "Carlos" not in all_text(financial)


def test_the_failsafe_asks_again_for_a_dropped_call_and_merges_without_duplicates(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    text = "¿qué hay libre mañana? y decime cuánto debe Ferretería Norte"
    first = call("scheduling", "¿qué hay libre mañana?", 2)
    server.add(tool_calls([first]), when=ORCHESTRATOR)
    # The retry repeats the call it already made and adds the missing one.
    server.add(
        tool_calls([first, call("financial", "cuánto debe Ferretería Norte", 2)]),
        when=ORCHESTRATOR,
    )
    server.add(scripted.text("Mañana hay lugar."), when=SCHEDULING)
    server.add(scripted.text("No debe nada."), when=FINANCIAL)

    turn = ask(cast, conversation, text)

    assert len(agent_requests(server, ORCHESTRATOR)) == 2
    runs = AgentRun.objects.filter(turn_id=turn.result.turn_id)
    assert sorted(r.agent for r in runs) == ["financial", "scheduling"]
    assert "failsafe" in turn.trace()["plan"]["guards"]


# --- fast path --------------------------------------------------------------------------------


def test_a_greeting_is_answered_by_the_orchestrator_itself(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    server.add(scripted.text("¡Hola! ¿En qué te doy una mano?"), when=ORCHESTRATOR)

    turn = ask(cast, conversation, "hola")

    assert turn.reply == "¡Hola! ¿En qué te doy una mano?"
    assert not AgentRun.objects.filter(turn_id=turn.result.turn_id).exists()
    assert "".join(turn.texts()) == turn.reply


def test_a_question_is_never_answered_by_the_orchestrator_itself(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    server.add(scripted.text("Abrimos de 7 a 23, todos los días."), when=ORCHESTRATOR)
    server.add(scripted.text("Atendemos de lunes a viernes de 8 a 18."), when=GENERAL)

    turn = ask(cast, conversation, "¿en qué horario atienden?")

    assert "7 a 23" not in turn.reply
    assert "de lunes a viernes de 8 a 18" in turn.reply
    assert AgentRun.objects.filter(turn_id=turn.result.turn_id, agent="general").exists()
    assert "not_small_talk" in turn.trace()["plan"]["guards"]


# --- faults: the embedded engine answers ------------------------------------------------------


FAULTS = {
    "timeout": lambda: scripted.hang(3.0),
    "rate_limited": lambda: scripted.status(429, retry_after=0.1),
    "dropped": lambda: scripted.drop_after(
        tool_calls([call("general", "¿en qué horario atienden?")], preamble="Ya te digo"), 2
    ),
    "no_finish_reason": lambda: scripted.no_finish(scripted.text("Atendemos de 8 a 18")),
    "invalid_chunk": lambda: scripted.invalid_chunk(scripted.text("Atendemos de 8 a 18"), at=1),
}


@pytest.mark.parametrize("kind", sorted(FAULTS))
def test_a_model_failure_falls_back_to_the_embedded_engine_with_a_complete_answer(
    cast: Cast, conversation: Conversation, server: ScriptedServer, kind: str
) -> None:
    server.add(FAULTS[kind](), when=ORCHESTRATOR, times=None)

    turn = ask(cast, conversation, "¿en qué horario atienden?")

    assert turn.result.ok
    assert not [e for e in turn.events if e["type"] == "error"]
    trace = turn.trace()
    assert trace["routed_by"] == "embedded"
    assert trace["fallback"]["stage"] == "orchestrator"
    assert trace["fallback"]["kind"] == kind
    # The embedded general agent answered with the organisation's hours (a complete reply).
    assert "8" in turn.reply and "18" in turn.reply
    completed = turn.events[-1]
    assert completed["type"] == "completed" and completed["text"] == turn.reply


def test_a_sub_agent_failure_falls_back_to_its_embedded_handler(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    text = "¿en qué horario atienden?"
    server.add(tool_calls([call("general", text, intent="hours")]), when=ORCHESTRATOR)
    server.add(scripted.drop_after(scripted.text("Atendemos de lunes a"), 2), when=GENERAL)

    turn = ask(cast, conversation, text)

    assert turn.result.ok
    (step,) = turn.trace()["steps"]
    assert step["fallback"] == "dropped"
    assert step["success"] is True
    assert "18" in turn.reply
    assert "".join(turn.texts()).endswith(turn.reply.split("\n\n")[-1])


# --- clarification ----------------------------------------------------------------------------


def test_a_clarification_reply_resumes_the_agent_without_the_orchestrator(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    factories.make_customer(cast.org, name="Marta Quiroga")
    server.add(
        tool_calls([call("scheduling", "agendá un service de split", intent="book_job")]),
        when=ORCHESTRATOR,
    )
    ask_who = tool_calls(
        [("ask_clarification", {"question": "¿Para qué cliente?", "missing": "customer"})]
    )
    server.add(ask_who, when=SCHEDULING)
    server.add(scripted.text("Listo, quedó agendado para Marta Quiroga."), when=SCHEDULING)

    first = ask(cast, conversation, "agendá un service de split")
    second = ask(cast, conversation, "para Marta Quiroga")

    assert "¿Para qué cliente?" in first.reply
    step = [e for e in first.events if e["type"] == "agent_start"][0]  # its end folded in
    assert step.get("clarifying") is True
    assert len(agent_requests(server, ORCHESTRATOR)) == 1  # the reply did not go to the model
    resumed = agent_requests(server, SCHEDULING)[-1]
    assert "agendá un service de split" in all_text(resumed)
    assert "para Marta Quiroga" in all_text(resumed)
    assert second.trace()["routed_by"] == "clarification"
    conversation.refresh_from_db()
    assert "pending_clarification" not in conversation.state


def _asks_which_job_twice(server: ScriptedServer) -> None:
    server.add(tool_calls([call("scheduling", "movelo", intent="reschedule")]), when=ORCHESTRATOR)
    question = tool_calls([("ask_clarification", {"question": "¿Cuál trabajo?", "missing": "job"})])
    server.add(question, when=SCHEDULING)
    server.add(question, when=SCHEDULING)


def test_after_two_questions_in_a_row_the_agent_must_make_its_best_choice(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    _asks_which_job_twice(server)
    # Best effort, yet truthful: it found nothing to move, and says so (a claim of a move no
    # tool made would not be shown).
    server.add(scripted.text("No encontré ningún trabajo para mover."), when=SCHEDULING)

    ask(cast, conversation, "movelo")
    ask(cast, conversation, "el de la semana que viene")
    third = ask(cast, conversation, "el del lunes")

    requests = agent_requests(server, SCHEDULING)
    assert len(requests) == 3
    offered = [{t["function"]["name"] for t in request.get("tools", [])} for request in requests]
    assert "ask_clarification" in offered[0] and "ask_clarification" in offered[1]
    assert "ask_clarification" not in offered[2]
    assert third.reply.startswith("No encontré ningún trabajo para mover.")
    conversation.refresh_from_db()
    assert "pending_clarification" not in conversation.state


def test_at_the_limit_a_reply_that_does_not_answer_never_reaches_the_agent(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    _asks_which_job_twice(server)

    ask(cast, conversation, "movelo")
    ask(cast, conversation, "el de la semana que viene")
    third = ask(cast, conversation, "no sé")

    assert len(agent_requests(server, SCHEDULING)) == 2  # no best-effort run from "no sé"
    assert len(agent_requests(server, ORCHESTRATOR)) == 1
    assert third.reply.startswith("No pude reprogramar el trabajo: no sé de qué trabajo se trata.")
    assert third.trace()["clarification"]["verdict"] == "unanswered"
    conversation.refresh_from_db()
    assert "pending_clarification" not in conversation.state


# --- hybrid and the engine choice -------------------------------------------------------------


def test_hybrid_asks_the_model_only_below_the_gate_and_its_receipt_says_so_once(
    cast: Cast, conversation: Conversation, org: Organisation, server: ScriptedServer
) -> None:
    org.engine = Organisation.Engine.HYBRID
    org.save(update_fields=["engine"])
    server.add(scripted.text("Decime un poco más, ¿qué necesitás?"), when=ORCHESTRATOR)
    manager = _client(cast.manager)

    confident = ask(cast, conversation, "¿en qué horario atienden?")
    assert server.requests == []
    assert confident.trace()["routed_by"] == "embedded"
    # The receipt (chat and trace, es-AR) says what happened: no model, once — a client was open.
    chat = _page(cast, conversation)
    trace = manager.get(_trace_url(confident), HTTP_ACCEPT_LANGUAGE="es-ar").content.decode()
    assert confident.trace()["privacy"]["sent_to_model"] is False
    assert "Nada salió del sistema: en este turno no se llamó a ningún modelo." in chat
    assert "En este turno no se llamó a ningún modelo." in trace
    assert "Se envió" not in chat + trace

    vague = ask(cast, conversation, "qwerty asdf zxcv")
    assert len(agent_requests(server, ORCHESTRATOR)) == 1
    assert vague.trace()["routed_by"] == "model"
    # The model read it, then the escalation agent's model was asked (and answered 500).
    trace = manager.get(_trace_url(vague), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert [p["purpose"] for p in vague.trace()["privacy"]["parts"]] == ["orchestrator", "agent"]
    assert "Sent to a model: the reading of the message, the step of " in trace
    assert trace.count("Sent to a model") == 1 and "No personal data found to mask." in trace
    assert "no model was called" not in trace.lower()
    assert _client(cast.outsider).get(_trace_url(vague)).status_code == 404


def _trace_url(turn: Turn) -> str:
    return reverse("trace_turn", args=[turn.result.turn_id])


def test_without_a_key_an_llm_organisation_runs_embedded(
    cast: Cast, conversation: Conversation, settings: Any
) -> None:
    settings.OPENAI_API_KEY = ""

    turn = ask(cast, conversation, "¿en qué horario atienden?")

    assert turn.trace()["engine"] == "embedded"
    assert "18" in turn.reply


def test_an_outsider_organisation_never_reaches_this_conversation(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    other = Organisation.objects.create(name="Otra", slug="otra", engine="llm")
    agents_install_defaults(organisation=other)

    with pytest.raises(Conversation.DoesNotExist):
        get_conversation_for_org(other.pk, conversation.pk)
    # A runner handed this conversation under the other organisation finds nothing to do.
    drained = runner.drain(other.pk, conversation.pk)
    assert drained.results == [] and drained.retry_in is None
    assert server.requests == []
    assert Agent.objects.filter(organisation=other).count() == 7


def test_opening_the_panel_warms_the_model_side_without_calling_the_model(
    org: Organisation, server: ScriptedServer
) -> None:
    from copilot.orchestration import engines
    from copilot.turn import warm_up
    from nlu.acts import shipped_model

    engines._schemas.pop(org.pk, None)
    shipped_model.cache_clear()

    warm_up(org.pk)

    key, schemas = engines._schemas[org.pk]
    assert {s["function"]["name"] for s in schemas} >= {"ask_scheduling", "ask_financial"}
    assert server.requests == []
    # The write gate's dialogue-act model is trained too, not by the first answer.
    assert shipped_model.cache_info().currsize == 1


# --- truth from the trace: a step is what its tools did --------------------------------------


BOOKING = "agendale a Juan Pérez una instalación de split el jueves a las 10"


def _weekday_at_ten() -> str:
    """The next Monday–Saturday after today, at 10:00 (the technician's working days)."""
    day = timezone.localdate() + datetime.timedelta(days=1)
    while day.weekday() == 6:
        day += datetime.timedelta(days=1)
    return f"{day.isoformat()}T10:00:00"


def _book(customer_id: int, call_id: str = "c1") -> Any:
    arguments = {"customer_id": customer_id, "service": "Instalación de split",
                 "start": _weekday_at_ten()}  # fmt: skip
    return ("job_book", arguments, call_id)


def _booking_cast(cast: Cast) -> int:
    factories.make_technician(cast.org)
    return factories.make_customer(cast.org, name="Juan Pérez").pk


def test_a_claimed_booking_that_no_tool_made_is_not_shown_and_the_handler_does_the_work(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    _booking_cast(cast)
    server.add(tool_calls([call("scheduling", BOOKING, intent="book_job")]), when=ORCHESTRATOR)
    server.add(scripted.text("¡Listo! Te agendé a Juan Pérez el jueves a las 10."), when=SCHEDULING)

    turn = ask(cast, conversation, BOOKING)

    (step,) = turn.trace()["steps"]
    assert step["fallback"] == "unbacked_claim"
    assert "Te agendé a Juan Pérez el jueves" not in turn.reply
    run = AgentRun.objects.get(turn_id=turn.result.turn_id, agent="scheduling")
    booked = Job.objects.filter(organisation=cast.org).count()
    assert booked <= 1 and run.success == (booked == 1)  # the status says what really happened


def test_a_write_request_the_model_did_not_carry_out_is_a_failed_step_and_says_so(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    _booking_cast(cast)
    server.add(tool_calls([call("scheduling", BOOKING, intent="book_job")]), when=ORCHESTRATOR)
    server.add(scripted.text("El jueves a las 10 no hay técnicos libres."), when=SCHEDULING)

    turn = ask(cast, conversation, BOOKING)

    assert not Job.objects.exists()
    run = AgentRun.objects.get(turn_id=turn.result.turn_id, agent="scheduling")
    assert not run.success and "not done" in run.error
    assert turn.reply.startswith("El jueves a las 10 no hay técnicos libres.")
    assert turn.reply.endswith("No quedó hecho: agendar el trabajo.")


def test_a_write_call_with_broken_arguments_leaves_the_step_failed(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    _booking_cast(cast)
    server.add(tool_calls([call("scheduling", BOOKING, intent="book_job")]), when=ORCHESTRATOR)
    broken = tool_calls([("job_book", '{"customer_id": 1, "start": ', "c1")])
    server.add(broken, when=SCHEDULING)
    server.add(scripted.text("No pude agendarlo."), when=SCHEDULING)

    turn = ask(cast, conversation, BOOKING)

    assert not Job.objects.exists()
    run = AgentRun.objects.get(turn_id=turn.result.turn_id, agent="scheduling")
    assert not run.success
    assert "No quedó hecho: agendar el trabajo." in turn.reply


@pytest.mark.parametrize(
    "garbage",
    [
        "<user_message>¿en qué horario atienden?</user_message>",
        "&lt;summary&gt;horarios&lt;/summary&gt;",
        "Atendemos de 9 a 17. Atendemos de 9 a 17. Atendemos de 9 a 17.",
        '{"ok": true, "data": {"hours": "9 a 17"}}',
        "",
    ],
)
def test_text_that_is_not_an_answer_is_discarded_and_the_step_falls_back(
    cast: Cast, conversation: Conversation, server: ScriptedServer, garbage: str
) -> None:
    text = "¿en qué horario atienden?"
    server.add(tool_calls([call("general", text, intent="hours")]), when=ORCHESTRATOR)
    server.add(scripted.text(garbage), when=GENERAL)

    turn = ask(cast, conversation, text)

    (step,) = turn.trace()["steps"]
    assert step["fallback"] == "not_an_answer" and step["success"] is True
    assert "9 a 17" not in turn.reply and "18" in turn.reply  # the organisation's real hours
    assert "<user_message>" not in turn.reply and "&lt;" not in turn.reply


def test_after_a_write_a_garbled_answer_says_by_record_what_was_done(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    customer_id = _booking_cast(cast)
    server.add(tool_calls([call("scheduling", BOOKING, intent="book_job")]), when=ORCHESTRATOR)
    server.add(tool_calls([_book(customer_id)]), when=SCHEDULING)
    server.add(scripted.text('A "held": true, so the task is completed.'), when=SCHEDULING)

    turn = ask(cast, conversation, BOOKING)

    job = Job.objects.get()
    assert "task is completed" not in turn.reply and "job_book" not in turn.reply
    assert f"#{job.pk} Instalación de split" in turn.reply  # named by its record
    (step,) = turn.trace()["steps"]
    assert step["fallback"] == "not_an_answer"


def test_two_orchestrator_calls_for_one_booking_in_other_words_book_once(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    customer_id = _booking_cast(cast)
    again = "reservale un turno a Juan Pérez el jueves 10 hs para instalar un split"
    server.add(
        tool_calls(
            [call("scheduling", BOOKING, 2, "book_job"), call("scheduling", again, 2, "book_job")]
        ),  # fmt: skip
        when=ORCHESTRATOR,
    )
    server.add(tool_calls([_book(customer_id)]), when=SCHEDULING, times=None)
    server.add(scripted.text("Agendado el trabajo."), when=SCHEDULING, times=None)

    turn = ask(cast, conversation, BOOKING)

    assert Job.objects.count() == 1
    assert AgentRun.objects.filter(turn_id=turn.result.turn_id, agent="scheduling").count() == 1
    assert "repeat" in turn.trace()["plan"]["guards"]
    assert "Sin hacer" not in turn.reply


def test_a_failsafe_call_repeating_a_booking_in_other_words_is_not_merged_in(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    customer_id = _booking_cast(cast)
    text = f"{BOOKING} y decime cuánto debe"
    first = call("scheduling", BOOKING, 2, "book_job")
    server.add(tool_calls([first]), when=ORCHESTRATOR)
    retry = call("scheduling", "turno para Juan Pérez, jueves 10:00, split", 2, "book_job")
    server.add(tool_calls([retry]), when=ORCHESTRATOR)
    server.add(tool_calls([_book(customer_id)]), when=SCHEDULING, times=None)
    server.add(scripted.text("Agendado el trabajo."), when=SCHEDULING, times=None)

    turn = ask(cast, conversation, text)

    assert len(agent_requests(server, ORCHESTRATOR)) == 2  # the failsafe asked
    assert Job.objects.count() == 1
    assert AgentRun.objects.filter(turn_id=turn.result.turn_id, agent="scheduling").count() == 1


def test_a_spent_turn_budget_falls_back_to_the_embedded_engine_and_the_trace_says_why(
    cast: Cast, conversation: Conversation, server: ScriptedServer, settings: Any
) -> None:
    settings.COPILOT_TURN_TOKEN_BUDGET = 200  # less than the orchestrator's prompt alone

    turn = ask(cast, conversation, "¿en qué horario atienden?")

    assert server.requests == []  # not sent: the budget could not afford it
    trace = turn.trace()
    assert trace["routed_by"] == "embedded" and trace["fallback"]["kind"] == "budget"
    assert "18" in turn.reply
    assert ModelCall.objects.get().error_kind == "budget"


def test_a_preamble_that_is_not_an_answer_is_left_out_of_the_reply(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    # What SmolLM2 wrote before its tool calls in bench/real_model.py.
    text = "¿en qué horario atienden?"
    garbage = 'functions.customer_create: { "name": "x" }'
    server.add(tool_calls([call("general", text, intent="hours")], preamble=garbage),
               when=ORCHESTRATOR)  # fmt: skip
    server.add(scripted.text("Atendemos de lunes a viernes de 8 a 18."), when=GENERAL)

    turn = ask(cast, conversation, text)

    assert "functions." not in turn.reply
    assert "de lunes a viernes de 8 a 18" in turn.reply


# --- the privacy guard (T4) -------------------------------------------------------------------


def test_no_phone_or_email_reaches_the_model_and_the_turn_carries_a_receipt(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    text = "¿qué hay libre el martes? la clienta es Juana, 11 5555-1234, juana@example.com"
    server.add(tool_calls([call("scheduling", text)]), when=ORCHESTRATOR)
    server.add(scripted.text("El martes a las 10; le aviso al [TEL_1]."), when=SCHEDULING)

    turn = ask(cast, conversation, text)

    assert server.requests
    for request in server.requests:
        sent = all_text(request)
        assert "5555-1234" not in sent and "juana@example.com" not in sent
    assert "11 5555-1234" in turn.reply  # the model's placeholder, given back its value
    receipt = turn.trace()["privacy"]
    assert receipt["sent_to_model"] is True and receipt["guard"] is True
    assert receipt["masked"]["phone"]["values"] == 1 and receipt["masked"]["email"]["values"] == 1
    page = _page(cast, conversation)
    assert [(p["purpose"], p["agent"]) for p in receipt["parts"]] == [
        ("orchestrator", ""), ("agent", "scheduling")
    ]  # fmt: skip
    receipt_line = next(line for line in page.splitlines() if "Se envió a un modelo" in line)
    assert receipt_line.endswith(
        "Se envió a un modelo: la lectura del mensaje, el paso de Agenda. "
        "Antes se enmascaró, con marcadores como [TEL_1]: 1 email, 1 teléfono."
    ), receipt_line


def _client(user: Any) -> Any:
    from django.test import Client

    client = Client(HTTP_ACCEPT_LANGUAGE="es-ar")
    client.force_login(user)
    return client


def _page(cast: Cast, conversation: Conversation) -> str:
    return _client(cast.operator).get(f"/chat/{conversation.pk}/").content.decode()


# --- the direct line on the llm engine (T2) ---------------------------------------------------


def test_a_sticky_direct_line_delivers_the_models_agent_answer_verbatim(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    answer_text = "Debe $ 12.000 en 1 factura (B 0001-00000012), vencida hace 3 días."
    server.add(scripted.text(answer_text), when=FINANCIAL, times=None)

    opened = ask(cast, conversation, "#finanzas")
    assert opened.reply.startswith("Línea directa con Finanzas abierta")
    assert server.requests == []  # opening the line asks no model

    for question in ("¿cuánto debe la Panadería?", "¿y la factura 12?"):
        turn = ask(cast, conversation, question)
        assert turn.reply == answer_text  # the agent's block, byte for byte, nothing added
        assert "".join(turn.texts()) == answer_text  # what streamed is the block, nothing else
        assert turn.trace()["direct_line"]["sticky"] is True
    orchestrator_calls = [r for r in server.requests if ORCHESTRATOR(r)]
    assert orchestrator_calls == []  # the line goes straight to the agent
    agent_users = [
        m["content"] for r in server.requests for m in r["messages"] if m["role"] == "user"
    ]
    assert any("¿y la factura 12?" in content for content in agent_users)  # verbatim in

    closed = ask(cast, conversation, "#salir")
    assert closed.reply == "Línea directa con Finanzas cerrada. Volviste al copiloto."


# --- a refused write, and a model that says it worked --------------------------------------

FULL_THURSDAY = "agendale a Juan Pérez una instalación de split el jueves 3 de diciembre a las 10"


def _thursday_taken(cast: Cast) -> int:
    """Juan Pérez, and the only technician busy on Thursday 3 December from 9 to 13."""
    technician = factories.make_technician(cast.org)
    juan = factories.make_customer(cast.org, name="Juan Pérez")
    other = factories.make_customer(cast.org, name="Ana Torres")
    start = datetime.datetime(2026, 12, 3, 9, tzinfo=BUENOS_AIRES)
    factories.make_job(cast.org, other, start, hours=4, technician=technician)
    return juan.pk


@pytest.mark.parametrize("engine", [Organisation.Engine.LLM, Organisation.Engine.HYBRID])
def test_a_refused_booking_the_model_calls_done_says_why_and_what_is_free(
    cast: Cast, conversation: Conversation, server: ScriptedServer, engine: str
) -> None:
    cast.org.engine = engine
    cast.org.save(update_fields=["engine"])
    if engine == Organisation.Engine.HYBRID:  # the embedded reading below the gate: the model
        Agent.objects.filter(organisation=cast.org, name="scheduling").update(min_confidence=1)
    juan = _thursday_taken(cast)
    server.add(
        tool_calls([call("scheduling", FULL_THURSDAY, intent="book_job")]), when=ORCHESTRATOR
    )
    attempt = {"customer_id": juan, "service": "Instalación de split",
               "start": "2026-12-03T10:00:00"}  # fmt: skip
    server.add(tool_calls([("job_book", attempt, "c1")]), when=SCHEDULING)
    server.add(scripted.text("Listo, quedó agendado para el jueves a las 10."), when=SCHEDULING)
    before = Job.objects.count()

    turn = ask(cast, conversation, FULL_THURSDAY)

    assert Job.objects.count() == before  # nothing was booked, and nothing says it was
    assert "quedó agendado" not in turn.reply
    assert "modelo" not in turn.reply and "confiable" not in turn.reply
    # The refusal's own reason, and the slots that are free instead.
    assert "No hay ningún técnico libre para ese trabajo en ese horario" in turn.reply
    assert "Te propongo estos turnos libres" in turn.reply
    run = AgentRun.objects.get(turn_id=turn.result.turn_id, agent="scheduling")
    assert not run.success
    # The model did try the booking and did claim it (its claim is what the step falls back on).
    (step,) = turn.trace()["steps"]
    assert step["fallback"] == "unbacked_claim"
    assert len(agent_requests(server, SCHEDULING)) == 2


def test_on_the_embedded_engine_a_refused_booking_says_why_and_what_is_free(
    cast: Cast, conversation: Conversation
) -> None:
    cast.org.engine = Organisation.Engine.EMBEDDED
    cast.org.save(update_fields=["engine"])
    _thursday_taken(cast)
    before = Job.objects.count()

    turn = ask(cast, conversation, FULL_THURSDAY)

    assert Job.objects.count() == before
    assert "No hay ningún técnico libre para ese trabajo en ese horario" in turn.reply
    assert "Te propongo estos turnos libres" in turn.reply


def test_after_a_write_a_broken_answer_is_replaced_by_what_was_done_and_what_was_refused(
    cast: Cast, conversation: Conversation, server: ScriptedServer
) -> None:
    juan = _thursday_taken(cast)
    server.add(
        tool_calls([call("scheduling", FULL_THURSDAY, intent="book_job")]), when=ORCHESTRATOR
    )
    free = {"customer_id": juan, "service": "Instalación de split", "start": "2026-12-03T13:00"}
    taken = {**free, "start": "2026-12-03T10:00"}
    server.add(tool_calls([("job_book", free, "c1"), ("job_book", taken, "c2")]), when=SCHEDULING)
    server.add(scripted.text("<|im_end|> Listo <|im_end|>"), when=SCHEDULING)
    before = set(Job.objects.values_list("pk", flat=True))

    turn = ask(cast, conversation, FULL_THURSDAY)

    [job] = Job.objects.exclude(pk__in=before)
    (step,) = turn.trace()["steps"]
    assert step["fallback"] == "not_an_answer"
    assert turn.reply.startswith(f"Esto quedó hecho: #{job.pk} Instalación de split")
    assert "No se pudo: No hay ningún técnico para ese trabajo libre a esa hora." in turn.reply
    assert "modelo" not in turn.reply and "<|im_end|>" not in turn.reply
