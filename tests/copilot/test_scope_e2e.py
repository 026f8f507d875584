"""One request with cue words is one step; out of scope is `unknown`; a vague request is asked
about (issue 17, items 2-3), end to end on the demo.

The same harness as tests/copilot/test_intents_e2e.py: real graph, router, handlers and tools over
`manage.py load_demo`. Anger, money or availability words inside a booking book the job and open
no ticket; an exchange-rate question changes nothing and is answered as out of scope; "agendá
algo" asks for whom instead of saying it is out of scope.
"""

from __future__ import annotations

import pytest

from tests.copilot.demo_harness import (
    Demo,
    Diff,
    Records,
    ask,
    bookable_hour,
    es_day,
    new_conversation,
)

pytestmark = pytest.mark.one_router  # one trained router for the module (tests/copilot/conftest.py)


def test_an_angry_customer_inside_a_booking_books_and_opens_no_ticket(demo: Demo) -> None:
    [day] = demo.working_days(2, 1)
    hour = bookable_hour(demo, day, "ac")
    before = Records.of(demo.org)

    turn = ask(
        demo,
        new_conversation(demo),
        f"agendale un service de split a Graciela Ibarra el {es_day(day)} a las {hour}, "
        "que está re caliente porque no le anda el aire",
    )

    diff = Diff(before, Records.of(demo.org))
    assert turn.intents == ["book_job"]
    [job] = diff.new_jobs
    assert job.customer.name == "Graciela Ibarra"
    assert demo.local(job.scheduled_start) == demo.at(day, hour)
    diff.assert_unchanged(but=("jobs",))  # no complaint ticket from "está re caliente"


def test_an_exchange_rate_question_is_out_of_scope(demo: Demo) -> None:
    before = Records.of(demo.org)

    turn = ask(demo, new_conversation(demo), "¿a cuánto está el dólar hoy?")

    assert turn.intents == ["unknown"]
    Diff(before, Records.of(demo.org)).assert_unchanged()


@pytest.mark.parametrize(
    ("text", "intent", "question"),
    [
        ("agendá algo", "book_job", "¿Para qué cliente es el trabajo?"),
        ("book something", "book_job", "Which customer is the job for?"),
        ("hacé un presupuesto", "generate_quote", "¿Para qué cliente es el presupuesto?"),
    ],
)
def test_a_vague_request_is_asked_about_not_refused(
    demo: Demo, text: str, intent: str, question: str
) -> None:
    before = Records.of(demo.org)

    turn = ask(demo, new_conversation(demo), text)

    assert turn.intents == [intent]
    assert question in turn.reply
    Diff(before, Records.of(demo.org)).assert_unchanged()
