"""Prerequisites stated as facts become steps of their own, before what builds on them."""

from __future__ import annotations

import pytest

from nlu.prerequisites import add_stated, read_as_stated_new, settle_facts
from nlu.values import Entities, Task
from tests.nlu.training_examples import specs

SPECS = specs()


def _chain(intent: str, text: str) -> list[str]:
    tasks, _added = add_stated([Task(intent, "", 0.9, text)], text, SPECS)
    return [task.intent for task in tasks]


@pytest.mark.parametrize(
    "text",
    [
        "Mové los trabajos de Diego al jueves, está enfermo",
        "pasá todo lo de Leandro al viernes que se engripó",
        "Ramiro no viene mañana, repartí sus trabajos",
        "Marta tiene fiebre, movele la agenda al lunes",
        "Move all of Diego's jobs to Thursday, he is off sick on Wednesday",
        "Mike called in sick, push his jobs to Friday",
        "Tom has the flu, reschedule everything he had today",
    ],
)
def test_an_absence_stated_as_a_fact_records_it_before_moving_the_jobs(text: str) -> None:
    assert _chain("bulk_reschedule", text) == ["technician_sick", "bulk_reschedule"]


@pytest.mark.parametrize(
    "text",
    [
        "agendale una visita a Rosa Díaz mañana 10hs, es clienta nueva",
        "Book Anna Smith for Friday 9am, she's a new customer",
        "reservá un turno para los Gómez, todavía no están registrados",
        "agendame a Carla Mendoza mañana 10hs. Es nueva, cargala con el cel 11 6789 0011",
        "presupuestale a Ricardo Soria un calefactor, todavía no lo dimos de alta",
        "Hi, I'm new here - Tom Walsh. Can someone check my AC this Friday?",
        # The customer's own word on WhatsApp.
        "Hola soy nueva, me llamo Romina Acuña. ¿Pueden venir el lunes a las 16?",
        "es la primera vez que les escribo, ¿me agendan una revisión del split?",
        "Hi, first time contacting you: could you book a boiler check on Friday?",
    ],
)
def test_a_new_customer_stated_as_a_fact_is_registered_before_the_booking(text: str) -> None:
    assert _chain("book_job", text) == ["create_customer", "book_job"]


@pytest.mark.parametrize(
    ("intent", "text"),
    [
        ("bulk_reschedule", "mové los trabajos del viernes al lunes"),
        ("bulk_reschedule", "Move everything from Friday to Monday, the client is not in a rush"),
        ("book_job", "agendale una visita a Rosa Díaz mañana 10hs"),
        ("book_job", "agendá a Pérez, el mismo cliente de siempre"),
        ("book_job", "agendale la instalación a Pérez, el equipo es nuevo"),
        ("book_job", "book Ann for Friday, the boiler is new"),
        ("book_job", "es la primera vez que se rompe, agendá una visita a Ana Paz"),
        ("book_job", "soy nueva en el barrio, ¿me agendan a Ana Paz?"),
        ("search_customer", "buscame a Diego, está enfermo?"),  # nothing builds on it
    ],
)
def test_nothing_is_added_when_the_message_states_no_such_fact(intent: str, text: str) -> None:
    assert _chain(intent, text) == [intent]


def test_a_prerequisite_already_in_the_chain_is_not_added_twice() -> None:
    text = "Diego está enfermo, mové sus trabajos al jueves"
    tasks = [Task("technician_sick", "", 0.9, "Diego está enfermo"),
             Task("bulk_reschedule", "", 0.9, "mové sus trabajos al jueves")]  # fmt: skip
    kept, added = add_stated(tasks, text, SPECS)
    assert [t.intent for t in kept] == ["technician_sick", "bulk_reschedule"] and added == []


@pytest.mark.parametrize(
    ("intent", "text"),
    [
        ("generate_invoice", "el laburo de Funes nunca se cargó, facturale 30 lucas"),
        ("generate_invoice", "facturale a Paz la visita de ayer, que todavía no está agendada"),
        ("assign_vehicle", "the Grant job was never entered; give the Transit to Lou for it"),
    ],
)
def test_a_job_never_entered_is_booked_before_it_is_invoiced_or_given_a_van(
    intent: str, text: str
) -> None:
    assert _chain(intent, text) == ["book_job", intent]


def test_a_job_not_entered_is_not_a_new_customer() -> None:
    text = "el trabajo de Sosa no está cargado, agendalo para el lunes"
    assert _chain("book_job", text) == ["book_job"]


def _settled(parts: list[tuple[str, str]]) -> list[str]:
    tasks = [Task(intent, "", 0.9, text) for intent, text in parts]
    opens_a_request = ("agend", "mand", "cargalo", "book")
    return [
        t.intent
        for t in settle_facts(tasks, lambda t: t.lower().startswith(opens_a_request), SPECS)
    ]


def test_a_part_that_only_states_a_fact_is_the_fact() -> None:
    parts = [("emergency", "Sosa se lesionó la rodilla"), ("dispatch", "mandá a otro ya")]
    assert _settled(parts) == ["technician_sick", "dispatch"]


def test_a_stated_fact_another_part_asks_for_adds_nothing() -> None:
    parts = [("search_customer", "ese laburo no está cargado"), ("book_job", "cargalo mañana"),
             ("assign_vehicle", "mandale la Partner a Pablo")]  # fmt: skip
    assert _settled(parts) == ["book_job", "assign_vehicle"]


def test_naming_the_customer_being_registered_is_not_a_search() -> None:
    parts = [("create_customer", "el cliente es nuevo"), ("search_customer", "se llama Ana Paz"),
             ("book_job", "agendale el viernes")]  # fmt: skip
    assert _settled(parts) == ["create_customer", "book_job"]


def test_a_part_with_its_own_request_is_left_alone() -> None:
    parts = [("generate_quote", "Ana Paz es clienta nueva: cotizale un split")]
    assert _settled(parts) == ["generate_quote"]


@pytest.mark.parametrize(
    ("text", "read"),
    [
        # Said to be new, her details are part of registering her: nobody is updated.
        ("Es nueva, cargala con el cel 11 6789 0011", ["create_customer"]),
        ("I'm new here, my phone is 11 4455 9087", ["create_customer"]),
        ("cambiale el celular a Carla Mendoza, 11 6789 0011", ["update_customer"]),
    ],
)
def test_an_update_of_a_customer_said_to_be_new_is_the_registration(
    text: str, read: list[str]
) -> None:
    tasks, _renamed = read_as_stated_new([Task("update_customer", "", 0.4, text)], text, SPECS)
    assert [task.intent for task in tasks] == read


def test_beside_the_registration_the_update_of_a_new_customer_is_folded_into_it() -> None:
    text = "agendame a Carla Mendoza mañana, es clienta nueva, cargale el cel 11 6789 0011"
    chain = [Task("create_customer", "", 0.9, text), Task("book_job", "", 0.9, text),
             Task("update_customer", "", 0.5, text)]  # fmt: skip
    tasks, renamed = read_as_stated_new(chain, text, SPECS)
    assert [task.intent for task in tasks] == ["create_customer", "book_job"]
    assert renamed == ["update_customer → create_customer"]


def test_the_folded_update_gives_the_registration_its_words_and_entities() -> None:
    # add_stated registered her from the clause alone; the phone is in the update's words.
    text = "agendame a Carla Mendoza mañana 10hs. Es nueva, cargala con el cel 11 6789 0011"
    chain = [Task("create_customer", "", 0.9, "Es nueva"),
             Task("book_job", "", 0.9, "agendame a Carla Mendoza mañana 10hs",
                  Entities(customer="Carla Mendoza")),
             Task("update_customer", "", 0.5, "Es nueva, cargala con el cel 11 6789 0011",
                  Entities(customer="Carla Mendoza"))]  # fmt: skip
    tasks, _renamed = read_as_stated_new(chain, text, SPECS)
    registration = tasks[0]
    assert registration.text == "Es nueva, cargala con el cel 11 6789 0011"
    assert registration.entities.customer == "Carla Mendoza"
    # Words the registration's step does not hold already are added after its own.
    chain = [Task("create_customer", "", 0.9, "es clienta nueva"),
             Task("update_customer", "", 0.5, "su cel es 11 6789 0011")]  # fmt: skip
    tasks, _renamed = read_as_stated_new(chain, "es clienta nueva, su cel es 11 6789 0011", SPECS)
    assert [(t.intent, t.text) for t in tasks] == [
        ("create_customer", "es clienta nueva, su cel es 11 6789 0011")
    ]


def test_a_question_of_its_own_beside_a_booking_stays_in_the_chain() -> None:
    # book_job's question form is check_availability: a part that only names the booking's
    # details is folded into it, a question of its own is asked.
    parts = [("check_availability", "¿Qué técnicos tenemos libres el 15/12?"),
             ("book_job", "y programame un service para el 15/12 a las 10hs")]  # fmt: skip
    assert _settled(parts) == ["check_availability", "book_job"]
