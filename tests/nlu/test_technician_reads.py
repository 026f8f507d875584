"""A read about a customer never lands on a person the organisation knows only as a technician
(nlu/router.py `_not_a_customer`, from the registry's `subject` and `writes`)."""

from __future__ import annotations

from nlu import Router, Vocabulary
from tests.nlu.conftest import make_context

PEOPLE = Vocabulary(customers=("Graciela Ibarra",), technicians=("Lucas Romero",))


def intents(router: Router, text: str, vocabulary: Vocabulary = PEOPLE) -> list[str]:
    return [task.intent for task in router.understand(text, make_context(vocabulary)).tasks]


def test_a_technicians_day_is_not_read_as_a_customers_file(router: Router) -> None:
    read = router.understand("¿Qué trabajos tiene Lucas mañana?", make_context(PEOPLE))
    [task] = read.tasks
    assert (task.intent, task.entities.technician) == ("check_availability", "Lucas Romero")
    # Only as likely as the words make it: the confidence is the read's own, not the customer's.
    assert task.confidence < 0.5


def test_the_same_words_about_a_customer_stay_a_customers_file(router: Router) -> None:
    assert intents(router, "¿Qué trabajos tiene Graciela Ibarra?") == ["search_customer"]
    # A name the organisation does not know is not known to be a technician's.
    assert intents(router, "¿Qué trabajos tiene Patitas mañana?") == ["search_customer"]


def test_writes_and_technician_requests_are_left_as_they_are(router: Router) -> None:
    assert intents(router, "Lucas está enfermo, no viene mañana") == ["technician_sick"]
    assert intents(router, "agendale un service a Graciela Ibarra mañana a las 10") == ["book_job"]
