"""Whether a reply answers the pending question (O8): `clarify.judge`, by the question's slot.

A reply is the answer only when it plausibly answers *that* question; anything else never
resumes it (tests/copilot/test_clarification_e2e.py runs the same on real turns)."""

from __future__ import annotations

import datetime

import pytest

from copilot.orchestration.clarify import Heard, Pending, Verdict, judge
from nlu.values import Entities
from tests.nlu.test_answers import JOBS

NOW = datetime.datetime(2026, 11, 18, 13, 0, tzinfo=datetime.UTC)
SLOTS = (
    "¿Para cuándo agendo el service de Juan? No me dijiste el día. Te propongo estos turnos "
    "libres:\n1. jueves 26/11 10:00 con Diego Fernández\n2. viernes 27/11 08:00 con Martín Sosa\n"
    "¿Cuál te sirve?"
)
QUESTIONS = {
    "job_choice": ("cancel_job", JOBS),
    "job": ("assign_vehicle", "¿Para qué trabajo es el vehículo? Decime el cliente o el técnico."),
    "date": ("book_job", SLOTS),
    "customer": ("book_job", "¿Para qué cliente es el trabajo?"),
    "duplicate": ("create_customer", "¿Es el mismo que Juan Pérez (#3)? Decime «sí» o «es otro»."),
    "amount": ("generate_quote", "¿Por qué monto?"),
    "email": ("update_customer", "¿Cuál es el email nuevo?"),
    "vehicle_choice": (
        "assign_vehicle",
        "Hay varios vehículos libres que coinciden:\n- AD882TR (Kangoo blanca)\n"
        "- AE123BC (Kangoo gris)\n¿Cuál asigno?",
    ),
}


def _pending(slot: str) -> Pending:
    intent, question = QUESTIONS[slot]
    agent = "customer" if intent.endswith("customer") else "scheduling"
    return Pending(intent, agent, "embedded", "el pedido", question, slot, 1, NOW.isoformat())


def _judge(slot: str, reply: str, **heard: object) -> Verdict:
    return judge(reply, _pending(slot), Heard(entities=Entities(), **heard))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("slot", "reply"),
    [("job_choice", "el segundo"), ("job_choice", "#15"), ("job_choice", "2"),
     ("job_choice", "el del jueves"), ("job_choice", "cualquiera"), ("job_choice", "el de Pérez"),
     ("job", "el de Juan Pérez"), ("job", "#12"), ("date", "el jueves"), ("date", "el primero"),
     ("date", "mañana a las 10"), ("customer", "Marta Quiroga"), ("duplicate", "sí"),
     ("duplicate", "no, es otro"), ("amount", "15 lucas"), ("email", "ana@example.com"),
     ("vehicle_choice", "la gris")],
)  # fmt: skip
def test_a_reply_of_the_slots_type_is_the_answer(slot: str, reply: str) -> None:
    assert _judge(slot, reply) == "answer"


@pytest.mark.parametrize(
    ("slot", "reply"),
    [("job_choice", "el del martes"), ("job_choice", "7"), ("date", "Marta Quiroga"),
     ("duplicate", "el jueves"), ("amount", "el de siempre"), ("email", "Juan Pérez"),
     ("vehicle_choice", "la camioneta roja"), ("job", "ese")],
)  # fmt: skip
def test_a_reply_of_another_type_is_not_the_answer(slot: str, reply: str) -> None:
    assert _judge(slot, reply) == "unanswered"


@pytest.mark.parametrize("slot", list(QUESTIONS))
@pytest.mark.parametrize(
    "reply", ["no sé", "ni idea", "I don't know", "<div><p>asdf</p></div>", "qwrtzp xkcdv"]
)
def test_dont_know_and_garbage_never_answer(slot: str, reply: str) -> None:
    assert _judge(slot, reply) == "unanswered"


@pytest.mark.parametrize("slot", list(QUESTIONS))
@pytest.mark.parametrize("reply", ["olvidalo", "dejá", "cancelá eso", "never mind", "skip it"])
def test_cancel_words_drop_the_question(slot: str, reply: str) -> None:
    assert _judge(slot, reply) == "never_mind"


def test_a_reply_that_opens_another_request_is_a_new_request() -> None:
    verdict = _judge("job", "buscá al cliente Juan Pérez", opening="search_customer")
    assert verdict == "new_request"


def test_a_request_of_the_same_intent_that_names_an_option_answers() -> None:
    assert _judge("job_choice", "cancelá el #15", opening="cancel_job") == "answer"
    assert _judge("job_choice", "cancelá el segundo", opening="reschedule") == "answer"


def test_a_confident_other_intent_is_a_new_request_unless_a_short_fitting_answer() -> None:
    assert _judge("customer", "Marta Quiroga", confident="search_customer") == "answer"
    long = "necesito saber en qué horario atienden los sábados y los domingos en la oficina"
    assert _judge("customer", long, confident="hours") == "new_request"
    assert _judge("date", "Marta Quiroga", confident="search_customer") == "new_request"


def test_an_emergency_is_never_an_answer() -> None:
    assert _judge("job_choice", "el segundo", emergency=True) == "new_request"
