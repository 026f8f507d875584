"""The write gate through the graph with a scripted router (orchestration/write_gate.py): a doubtful
write asks which reading was meant — never yields into a hand-off — and the answer runs the
chosen reading; a question read as a write runs the reading that writes nothing."""

from __future__ import annotations

from dataclasses import replace

import pytest

from agents.base import Step
from agents.defaults import default_specs
from agents.models import Agent, ToolCall
from business.models import EscalationTicket, Job
from copilot.models import AgentRun, Conversation
from copilot.orchestration import write_gate
from nlu import build_router
from nlu.values import Entities, Example, IntentSpec
from tests.conftest import Cast
from tests.copilot.conftest import ScriptedRouter, task
from tests.copilot.turns import answer

pytestmark = [
    pytest.mark.django_db(transaction=True),  # runners work in threads with their own connections
    pytest.mark.usefixtures("registry", "handlers"),
]


def intents_of(turn_id: str) -> list[str]:
    return list(
        AgentRun.objects.filter(turn_id=turn_id).order_by("pk").values_list("intent", flat=True)
    )


def test_a_write_below_the_gate_asks_which_reading_and_the_answer_runs_it(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    router.script["lo de Juan"] = [task("book_job", 0.2, candidates=[("search_customer", 0.1)])]
    # What clarify.judge asks of a router about a reply (the scripted one has no verbs).
    setattr(router, "openers", frozenset())  # noqa: B010
    setattr(router, "verbs", {})  # noqa: B010
    jobs = Job.objects.filter(organisation=cast.org).count()

    asked = answer(conversation, cast.operator.pk, "lo de Juan").result

    assert "1. agendar el trabajo\n2. buscar al cliente" in asked.text
    assert Job.objects.filter(organisation=cast.org).count() == jobs
    assert not EscalationTicket.objects.filter(organisation=cast.org).exists()
    conversation.refresh_from_db()
    assert conversation.state["pending_clarification"]["slot"] == "reading:book_job,search_customer"

    resumed = answer(conversation, cast.operator.pk, "el segundo").result

    assert intents_of(resumed.turn_id) == ["search_customer"]
    assert resumed.text.startswith("Encontré")
    assert Job.objects.filter(organisation=cast.org).count() == jobs


def test_two_doubtful_writes_never_hand_the_turn_to_a_person(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    router.script["eso que te dije"] = [task("book_job", 0.2), task("cancel_job", 0.1)]

    result = answer(conversation, cast.operator.pk, "eso que te dije").result

    assert not EscalationTicket.objects.filter(organisation=cast.org).exists()
    assert "No estoy seguro de qué necesitás" in result.text
    assert not AgentRun.objects.filter(turn_id=result.turn_id, yielded=True).exists()


def test_a_question_read_as_a_write_runs_the_reading_that_writes_nothing(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    text = "que clientes tenemos en Palermo?"
    router.script[text] = [
        task("update_customer", 0.95, text, candidates=[("search_customer", 0.5)])
    ]

    result = answer(conversation, cast.operator.pk, text).result

    assert intents_of(result.turn_id) == ["search_customer"]
    assert result.text.startswith("Encontré")


@pytest.mark.parametrize(("second", "runs"), [(0.18, True), (0.03, False)])
def test_a_question_runs_a_weak_reading_that_writes_nothing_or_asks(
    cast: Cast, conversation: Conversation, router: ScriptedRouter, second: float, runs: bool
) -> None:
    """Below its agent's gate, a question's quiet reading still runs from the floor: asking
    back costs a turn and nothing it does can write; far below, it asks."""
    text = "que clientes hay en Palermo para el service?"
    router.script[text] = [
        task("update_customer", 0.72, text, candidates=[("search_customer", second)])
    ]
    setattr(router, "openers", frozenset())  # noqa: B010
    setattr(router, "verbs", {})  # noqa: B010

    result = answer(conversation, cast.operator.pk, text).result

    assert (intents_of(result.turn_id) == ["search_customer"]) is runs
    assert ("No estoy seguro" in result.text) is not runs  # ran, not yielded
    assert not ToolCall.objects.filter(turn_id=result.turn_id).exclude(category="safe").exists()


def _step(intent: str) -> Step:
    return Step(index=0, intent=intent, agent="x", confidence=1.0, text="", entities=Entities())


@pytest.mark.parametrize(
    ("message", "support", "doubt"),
    [
        ("que vehiculos tenemos disponibles mañana?", 0.9, "question"),
        ("mmm fijate lo del otro dia con el tema ese del equipo", 0.2, "statement"),
        ("Martín está enfermo hoy", 0.9, ""),
        ("asignale la Kangoo al trabajo de Pérez", 0.1, ""),
        ("quien esta mas cerca? mandalo ya a lo de Molina", 0.1, ""),
    ],
)
def test_a_models_write_is_judged_by_the_message_act(
    message: str, support: float, doubt: str
) -> None:
    assert write_gate.doubt_model(_step("assign_vehicle"), message, support) == doubt


def test_an_emergency_is_never_held_back() -> None:
    emergency = default_specs()["emergency"]
    assert write_gate.doubt_model(_step("emergency"), "hay olor a gas?", 0.0, spec=emergency) == ""
    # It is the registry's "runs first" that says so: another write would be held.
    plain = replace(emergency, first=False)
    assert write_gate.doubt_model(_step("emergency"), "hay olor a gas?", 0.0, spec=plain) != ""


@pytest.mark.parametrize(
    ("spec", "doubt"),
    [
        (IntentSpec("order_parts", writes=True, subject="job"), "entities"),  # which job?
        (IntentSpec("order_parts", writes=True, subject="customer"), ""),
        (IntentSpec("order_parts", writes=True, subject="job", cue=True), ""),  # only a cue
        (IntentSpec("order_parts", subject="job"), ""),  # writes nothing
    ],
)
def test_a_write_on_a_job_that_names_none_is_doubtful_as_the_registry_says(
    spec: IntentSpec, doubt: str
) -> None:
    agent = Agent(name="fleet", min_confidence=0.35)
    step = replace(_step("order_parts"), text="pedí los repuestos")
    assert write_gate.doubt(agent, step, {}, spec=spec) == doubt
    named = replace(step, entities=Entities(customer="Juan Pérez"))
    assert write_gate.doubt(agent, named, {}, spec=spec) == ""


@pytest.mark.parametrize(
    ("text", "told", "doubt"),
    [
        # a report of what happened, read as a write its examples never tell: nothing is asked
        ("gracias, la factura ya la recibí, nada más por hoy, chau!", 0.05, "statement"),
        ("llegó la factura de Edesur", 0.05, "statement"),
        # an intent that is told by nature (an absence, a grievance) runs from a statement
        ("llegó la factura de Edesur", 0.8, ""),
        # a request verb, or someone wanting it, asks
        ("llegó la factura de Edesur, mandásela a Ruiz", 0.05, ""),
        ("la señora Lamas nunca nos llamó, quiere la factura del service", 0.05, ""),
        # no verb in the past: the act model alone takes typed-fast requests for statements
        ("give ignacio quintana the truck on dec 2", 0.05, ""),
    ],
)
def test_a_report_of_what_happened_does_not_write_what_is_only_asked_for(
    text: str, told: float, doubt: str
) -> None:
    agent = Agent(name="financial", min_confidence=0.35)
    spec = replace(default_specs()["generate_invoice"], told=told)
    step = replace(_step("generate_invoice"), text=text, entities=Entities(customer="Ruiz"))
    assert write_gate.doubt(agent, step, {}, spec=spec) == doubt


def test_the_router_learns_which_writes_are_told_from_the_registry_examples() -> None:
    examples = [
        Example(text, intent, "x")
        for intent, texts in {
            "technician_sick": ["Carlos está enfermo", "Diego no viene, tiene fiebre"],
            "generate_invoice": ["facturale a Ruiz el service", "hacé la factura de Gómez"],
        }.items()
        for text in texts
    ]
    specs = [
        IntentSpec("technician_sick", writes=True),
        IntentSpec("generate_invoice", writes=True),
        IntentSpec("hours"),
    ]
    router = build_router(examples, specs=specs)
    assert router.specs["technician_sick"].told == 1.0
    assert router.specs["generate_invoice"].told == 0.0
    assert router.specs["hours"].told == 1.0  # writes nothing, no examples: never held
