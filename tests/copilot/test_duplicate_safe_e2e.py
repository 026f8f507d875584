"""Duplicate-safe creation end to end on the demo (embedded engine, real turns).

The same harness as tests/copilot/test_intents_e2e.py: each message is stored and its turn run
through the compiled graph, the organisation's trained router, the real handlers and tools.

- A search phrasing never registers anyone: "buscame el cliente Consorcio Av. Cabildo 2150"
  once read as a registration (0.447 against 0.445) and added a copy on every try.
- Registering someone already on file (a typo'd name, the same phone) asks "¿Es el mismo
  que…?"; "sí" uses the one on file, "no, es otro" registers them — and a booking asked for in
  the same message waits for the answer, then runs for whichever customer it settled on.
"""

from __future__ import annotations

from typing import Any

import pytest

from business.models import Customer, Job
from common.text import strip_accents
from copilot.models import Conversation
from copilot.orchestration.clarify import PENDING
from tests.copilot.demo_harness import (
    Demo,
    Records,
    ask,
    bookable_hour,
    es_day,
    new_conversation,
)

pytestmark = pytest.mark.one_router  # one trained router for the module (tests/copilot/conftest.py)

BUILDING = "Consorcio Av. Cabildo 2150"


def _customers(demo: Demo) -> int:
    return Customer.objects.filter(organisation=demo.org).count()


def _pending(conversation: Conversation) -> dict[str, Any] | None:
    conversation.refresh_from_db()
    return conversation.state.get(PENDING)


def _on_file(demo: Demo) -> Customer:
    """A demo customer with a phone and a two-word name nobody else shares."""
    customers = Customer.objects.filter(organisation=demo.org).exclude(phone="").order_by("pk")
    for customer in customers:
        words = customer.name.split()
        plain = len(words) == 2 and all(len(w) >= 5 and w.isalpha() for w in words)
        namesakes = Customer.objects.filter(organisation=demo.org, name=customer.name)
        if plain and namesakes.count() == 1:
            return customer
    raise AssertionError("the demo has no customer with a plain two-word name")


def _typo(name: str) -> str:
    """ "Martín Sosa" → "Martin Soas": no accents, the surname's last two letters swapped."""
    plain = strip_accents(name)
    first, last = plain.split()
    return f"{first} {last[:-2]}{last[-1]}{last[-2]}"


@pytest.mark.parametrize("on_file", [True, False])
def test_a_search_phrasing_never_registers(demo: Demo, on_file: bool) -> None:
    """The reported case: the demo's own building, asked for again and again."""
    building = Customer.objects.get(organisation=demo.org, name=BUILDING)
    if not on_file:
        Customer.objects.filter(pk=building.pk).update(name="Edificio Mitre 900")
    before = _customers(demo)
    conversation = new_conversation(demo)
    for _ in range(2):
        turn = ask(demo, conversation, f"buscame el cliente {BUILDING}")
        assert turn.intents == ["search_customer"]
        assert _customers(demo) == before
    if on_file:
        assert turn.reply.startswith(f"{BUILDING} (cliente #{building.pk}):")
    else:  # what the search found for the words it could read; nobody registered
        assert "Consorcio" in turn.reply and "registré" not in turn.reply


def test_a_typed_namesake_asks_and_yes_keeps_the_one_on_file(demo: Demo) -> None:
    customer = _on_file(demo)
    conversation = new_conversation(demo)
    before = _customers(demo)

    asked = ask(demo, conversation, f"Registrá a {_typo(customer.name)}, tel 11 3456-7890")

    assert asked.intents == ["create_customer"]
    assert asked.reply.startswith(f"¿Es el mismo que {customer.name} (#{customer.pk})")
    assert _customers(demo) == before
    pending = _pending(conversation)
    assert pending is not None and pending["slot"] == "duplicate"

    answered = ask(demo, conversation, "sí, es el mismo")

    assert answered.trace["routed_by"] == "clarification"
    assert _customers(demo) == before
    assert f"{customer.name} (cliente #{customer.pk}), que ya estaba registrado" in answered.reply
    assert _pending(conversation) is None
    conversation.refresh_from_db()
    assert conversation.state["customer_id"] == customer.pk


def test_the_same_phone_asks_and_no_registers_the_new_one(demo: Demo) -> None:
    customer = _on_file(demo)
    conversation = new_conversation(demo)
    before = _customers(demo)

    asked = ask(demo, conversation, f"Registrá a Gabriela Montiel, tel {customer.phone}")

    assert f"(#{customer.pk})" in asked.reply and "mismo teléfono" in asked.reply
    assert _customers(demo) == before

    answered = ask(demo, conversation, "no, es otro")

    assert _customers(demo) == before + 1
    created = Customer.objects.get(organisation=demo.org, name="Gabriela Montiel")
    assert created.phone == customer.phone
    assert f"registré a Gabriela Montiel (cliente #{created.pk})" in answered.reply


@pytest.mark.parametrize(("answer", "same"), [("sí", True), ("no, es otro", False)])
def test_a_booking_in_the_same_message_waits_for_the_answer(
    demo: Demo, answer: str, same: bool
) -> None:
    customer = _on_file(demo)
    day = demo.working_days(2, 1)[0]
    hour = bookable_hour(demo, day, "ac")
    conversation = new_conversation(demo)
    before = Records.of(demo.org)

    asked = ask(
        demo, conversation,
        f"Registrá a {_typo(customer.name)}, tel 11 3456-7890, y agendale un service de split "
        f"el {es_day(day)} a las {hour}",
    )  # fmt: skip

    assert asked.intents == ["create_customer"]  # the booking did not run
    assert "Cuando me contestes sigo con: agendar el trabajo." in asked.reply
    assert Records.of(demo.org) == before
    pending = _pending(conversation)
    assert pending is not None and [later["intent"] for later in pending["then"]] == ["book_job"]

    answered = ask(demo, conversation, answer)

    assert answered.intents == ["create_customer", "book_job"]
    booked = Job.objects.filter(organisation=demo.org).exclude(pk__in=before.jobs).get()
    assert demo.local(booked.scheduled_start).date() == day
    if same:
        assert booked.customer_id == customer.pk
        assert _customers(demo) == len(before.customers)
    else:
        assert booked.customer_id != customer.pk
        assert booked.customer.phone == "+541134567890"
        assert _customers(demo) == len(before.customers) + 1
    assert _pending(conversation) is None
