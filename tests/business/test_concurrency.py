"""Concurrent writers on PostgreSQL (SQLite serialises writers by itself): document numbers
stay unique and one technician-hour is booked once, however many turns race for it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.db import connection, connections

from business import services
from business.models import Invoice, Job, Quote
from business.services import LineInput
from tests import factories
from tests.business.conftest import at

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="row locks only matter on PostgreSQL"
    ),
]


def race(work: Callable[[], Any], workers: int) -> tuple[list[Any], list[Exception]]:
    """Run `work` in `workers` threads released together; each thread has its own connection."""
    barrier = threading.Barrier(workers)
    results: list[Any] = []
    failures: list[Exception] = []

    def run() -> None:
        try:
            barrier.wait()
            results.append(work())
        except Exception as exc:  # collected for the assertions
            failures.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results, failures


def test_concurrent_quotes_get_distinct_numbers(cast) -> None:
    customer = factories.make_customer(cast.org)

    def create() -> str:
        return services.quote_create(
            organisation=cast.org, customer=customer, lines=[LineInput("Visita", 1, 100)]
        ).number

    numbers, failures = race(create, workers=6)
    assert failures == []
    assert sorted(numbers) == [f"P-{n:06d}" for n in range(1, 7)]
    assert Quote.objects.count() == 6


def test_concurrent_invoices_never_share_a_number(cast) -> None:
    person = factories.make_customer(cast.org, "Ana Gómez")
    company = factories.make_customer(cast.org, "Frío SA", kind="company", cuit="30-71234567-1")
    who = iter([person, company] * 4)
    customers = [next(who) for _ in range(8)]

    def create() -> str:
        customer = customers.pop()
        return services.invoice_create(
            organisation=cast.org, customer=customer, lines=[LineInput("Visita", 1, 100)]
        ).full_number

    numbers, failures = race(create, workers=8)
    assert failures == []
    expected = [f"{letter} 0001-{n:08d}" for letter in "AB" for n in range(1, 5)]
    assert sorted(numbers) == expected
    assert Invoice.objects.count() == 8


def test_concurrent_bookings_never_double_book_a_technician(cast, monday) -> None:
    customer = factories.make_customer(cast.org)
    factories.make_technician(cast.org, "Único")

    def book() -> int:
        return services.job_book(
            organisation=cast.org, customer=customer, service="Service", start=at(monday, 10)
        ).pk

    booked, failures = race(book, workers=4)
    assert len(booked) == 1
    assert len(failures) == 3 and all(isinstance(f, ValidationError) for f in failures)
    assert Job.objects.count() == 1
