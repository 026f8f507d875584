"""Style adaptation (P4) in booking: a customer's usual days and times (their profile) come
first when no day was said, and the proposal says why."""

from __future__ import annotations

import pytest

from agents.scheduling.agent import book_job
from business.models import Job
from business.profiles import customer_profile_edit
from tests import factories
from tests.handlers.conftest import TUESDAY, Desk, Shop, assert_no_foreign_data, at

pytestmark = pytest.mark.django_db


def usual_tuesday_mornings(desk: Desk, shop: Shop) -> None:
    customer_profile_edit(
        organisation=desk.cast.org, customer=shop.juan,
        values={"preferred_days": "martes", "preferred_time": "morning 09:00"},
        actor=desk.cast.manager,
    )  # fmt: skip


def test_a_proposal_prefers_the_customers_usual_day_and_time_and_says_so(
    desk: Desk, shop: Shop
) -> None:
    usual_tuesday_mornings(desk, shop)

    turn = desk.run(
        book_job, "book_job", "scheduling", customer="Juan Pérez", service="service de aire"
    )

    assert turn.outcome.error == "missing date" and turn.outcome.clarify is not None
    assert (
        "Te propongo el martes 24/11 09:00 con Carlos Gómez, como suele preferir Juan Pérez"
        in turn.text
    )
    assert "1. martes 24/11 09:00 con Carlos Gómez" in turn.text
    assert not Job.objects.filter(customer=shop.juan).exists()  # proposed, not booked
    assert_no_foreign_data(turn.text)


def test_the_proposal_says_so_in_english_too(desk: Desk, shop: Shop) -> None:
    usual_tuesday_mornings(desk, shop)

    turn = desk.run(
        book_job, "book_job", "scheduling", customer="Juan Pérez", service="AC service",
        language="en",
    )  # fmt: skip

    assert "I suggest Tue 24 Nov 09:00 with Carlos Gómez, as Juan Pérez usually prefers" in (
        turn.text
    )


def test_a_customer_without_a_profile_gets_the_next_free_slots(desk: Desk, shop: Shop) -> None:
    turn = desk.run(
        book_job, "book_job", "scheduling", customer="Juan Pérez", service="service de aire"
    )

    assert "suele preferir" not in turn.text
    assert "1. lunes 23/11 08:00 con Carlos Gómez" in turn.text


def test_a_full_usual_day_falls_back_to_the_next_free_slots(desk: Desk, shop: Shop) -> None:
    usual_tuesday_mornings(desk, shop)
    for technician in (shop.carlos, shop.lucia, shop.pedro):
        factories.make_job(
            desk.cast.org, shop.maria, at(TUESDAY, 8), hours=10, technician=technician
        )

    turn = desk.run(
        book_job, "book_job", "scheduling", customer="Juan Pérez", service="service de aire"
    )

    assert "suele preferir" not in turn.text
    assert "1. lunes 23/11 08:00 con Carlos Gómez" in turn.text


def test_the_operators_own_limit_wins_over_the_profile(desk: Desk, shop: Shop) -> None:
    usual_tuesday_mornings(desk, shop)

    turn = desk.run(
        book_job, "book_job", "scheduling", customer="Juan Pérez", service="service de aire",
        part_of_day="afternoon",
    )  # fmt: skip

    assert "suele preferir" not in turn.text
