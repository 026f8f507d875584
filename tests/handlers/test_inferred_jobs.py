"""A job the message does not name ("el de mañana", "the next one", "el trabajo de hoy") is
looked up in the records, and the reply says which job it took — never a silent pick."""

from __future__ import annotations

import pytest

from agents.financial.agent import generate_invoice
from agents.scheduling.agent import cancel_job
from approvals.models import PendingAction
from tests import factories
from tests.handlers.conftest import MONDAY, TUESDAY, Desk, Shop, assert_no_foreign_data, at

pytestmark = pytest.mark.django_db


def test_cancel_the_one_of_tomorrow_says_which_job_it_took(desk: Desk, shop: Shop) -> None:
    org = shop.juan.organisation
    job = factories.make_job(org, shop.juan, at(TUESDAY, 9), technician=shop.carlos)
    turn = desk.run(cancel_job, "cancel_job", "scheduling", date=TUESDAY,
                    text="cancelá el de mañana")  # fmt: skip
    assert PendingAction.objects.get(organisation=org).arguments["job_id"] == job.pk
    assert (
        f"Tomé el trabajo de mañana: #{job.pk} Service de aire acondicionado — Juan Pérez, "
        "martes 24/11 09:00, con Carlos Gómez (el único abierto ese día)."
    ) in turn.text
    assert_no_foreign_data(turn.text)  # the other organisation has a job that day too


def test_cancel_the_next_one_takes_the_soonest_of_the_customer_under_discussion(
    desk: Desk, shop: Shop
) -> None:
    org = shop.juan.organisation
    later = factories.make_job(org, shop.juan, at(TUESDAY + (TUESDAY - MONDAY), 9))
    sooner = factories.make_job(org, shop.juan, at(TUESDAY, 11))
    turn = desk.run(
        cancel_job, "cancel_job", "scheduling", language="en", text="cancel the next one",
        state={"customer_id": shop.juan.pk, "customer_label": "Juan Pérez"},
    )  # fmt: skip
    assert PendingAction.objects.get(organisation=org).arguments["job_id"] == sooner.pk
    assert f"I took the next job: #{sooner.pk} " in turn.text
    assert f"#{later.pk}" not in turn.text


def test_the_one_of_tomorrow_of_another_organisation_is_not_taken(desk: Desk, shop: Shop) -> None:
    turn = desk.run(cancel_job, "cancel_job", "scheduling", date=TUESDAY,
                    text="cancelá el de mañana")  # fmt: skip
    assert not turn.outcome.success
    assert turn.text == "No encontré trabajos abiertos el martes 24/11."
    assert not PendingAction.objects.exists()


def test_invoice_of_todays_job_says_it_took_todays_job(desk: Desk, shop: Shop) -> None:
    org = shop.juan.organisation
    today = factories.make_job(org, shop.juan, at(MONDAY, 9), service="Carga de gas")
    turn = desk.run(
        generate_invoice, "generate_invoice", "financial", customer="Juan Pérez",
        customer_matched=True, date=MONDAY, text="facturale a Juan Pérez el trabajo de hoy",
    )  # fmt: skip
    assert PendingAction.objects.get(organisation=org).arguments["job_id"] == today.pk
    assert (
        f"Tomé el trabajo de hoy de Juan Pérez: #{today.pk} (Carga de gas, lunes 23/11 09:00)."
    ) in turn.text


def test_invoice_of_a_day_with_two_jobs_asks_which(desk: Desk, shop: Shop) -> None:
    org = shop.juan.organisation
    first = factories.make_job(org, shop.juan, at(MONDAY, 9), service="Carga de gas")
    second = factories.make_job(org, shop.juan, at(MONDAY, 15), service="Service de split")
    turn = desk.run(
        generate_invoice, "generate_invoice", "financial", customer="Juan Pérez",
        customer_matched=True, date=MONDAY, text="facturale a Juan Pérez el trabajo de hoy",
    )  # fmt: skip
    assert not PendingAction.objects.exists()
    assert turn.text.startswith("Juan Pérez tiene 2 trabajos el lunes 23/11:")
    assert f"#{first.pk} Carga de gas" in turn.text
    assert f"#{second.pk} Service de split" in turn.text
    assert "¿Cuál facturo?" in turn.text
