"""Idempotent writes per turn (O3): a write the turn already made is answered with its first
result, whoever repeats it — the same handler, another step, a retry — and the trace says so."""

from __future__ import annotations

from typing import Any

import pytest

from agents.base import Outcome, Runner, Step
from agents.models import ToolCall
from approvals.models import PendingAction
from business.models import Customer, Job
from copilot.models import Conversation
from tests import factories
from tests.conftest import Cast
from tests.copilot.conftest import ScriptedRouter, job_under_discussion, task
from tests.copilot.test_graph import turn

pytestmark = pytest.mark.usefixtures("registry", "handlers")


def test_a_booking_repeated_with_another_technician_books_one_job(
    cast: Cast, conversation: Conversation, router: ScriptedRouter, handlers: dict[str, Any]
) -> None:
    customer = factories.make_customer(cast.org, "Juan Pérez")
    first_tech = factories.make_technician(cast.org, "Carlos Gómez", zone="Sur")
    second_tech = factories.make_technician(cast.org, "Ana Ruiz", zone="Sur")
    start = f"{factories.next_monday().isoformat()}T10:00"
    results: list[Any] = []

    def book_twice(step: Step, runner: Runner) -> Outcome:
        for tech in (first_tech, second_tech):  # a model calling job_book twice in one round
            results.append(
                runner.call("job_book", customer_id=customer.pk, service="Service de aire",
                            start=start, technician_id=tech.pk)
            )  # fmt: skip
        return Outcome(text="Agendado.")

    handlers["book_job"] = book_twice
    router.script["agendá a Juan"] = [task("book_job", 0.9)]

    turn(cast, conversation, "agendá a Juan")

    assert Job.objects.filter(organisation=cast.org, customer=customer).count() == 1
    assert [r.ok for r in results] == [True, True]
    assert results[1].data["repeated"] and results[1].data["job"] == results[0].data["job"]
    rows = ToolCall.objects.filter(tool="job_book").order_by("pk")
    assert rows.count() == 2 and "not repeated" in rows.last().summary  # visible in the trace


def test_two_steps_registering_one_customer_create_one(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    text = "dá de alta a Marta Díaz, sí, dá de alta a marta diaz"
    router.script[text] = [
        task("create_customer", 0.9, customer="Marta Díaz"),
        task("create_customer", 0.9, customer="Marta  Díaz"),
    ]

    turn(cast, conversation, text)

    assert Customer.objects.filter(organisation=cast.org, name__icontains="Marta").count() == 1


def test_a_cancellation_asked_twice_files_one_approval(
    cast: Cast, conversation: Conversation, router: ScriptedRouter
) -> None:
    job_under_discussion(cast, conversation, "Juan Pérez")
    router.script["cancelalo, cancelalo"] = [task("cancel_job", 0.9), task("cancel_job", 0.9)]

    turn(cast, conversation, "cancelalo, cancelalo")

    assert PendingAction.objects.filter(organisation=cast.org, tool="job_cancel").count() == 1


def test_a_different_target_is_not_a_repeat(
    cast: Cast, conversation: Conversation, router: ScriptedRouter, handlers: dict[str, Any]
) -> None:
    customer = factories.make_customer(cast.org, "Juan Pérez")
    factories.make_technician(cast.org, "Carlos Gómez", zone="Sur")
    monday = factories.next_monday().isoformat()

    def book_two_times(step: Step, runner: Runner) -> Outcome:
        for hour in ("10:00", "15:00"):
            runner.call(
                "job_book", customer_id=customer.pk, service="Service", start=f"{monday}T{hour}"
            )
        return Outcome(text="Agendados.")

    handlers["book_job"] = book_two_times
    router.script["dos visitas"] = [task("book_job", 0.9)]

    turn(cast, conversation, "dos visitas")

    assert Job.objects.filter(organisation=cast.org, customer=customer).count() == 2
