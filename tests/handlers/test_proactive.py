"""The proactive agent's handlers: maintenance due, follow-ups and the seasonal campaign, each a
concrete list of customers to call (with their phones) rather than a general reminder."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from agents.base import HANDLERS, load_handlers
from agents.proactive.agent import follow_up, maintenance_due, seasonal_reminder
from business import services
from business.models import Job
from tests import factories
from tests.conftest import Cast
from tests.handlers.conftest import BA, NOW, THURSDAY, Shop, assert_no_foreign_data, at
from tests.handlers.office import Office

pytestmark = pytest.mark.django_db


@pytest.fixture
def equipment(cast: Cast, shop: Shop) -> None:
    org = cast.org
    # Juan's split was due on 08/10 (46 days ago); María's boiler falls due on 05/12.
    factories.make_equipment(org, shop.juan, kind="Split", brand="BGH",
                             last_service_on=datetime.date(2025, 10, 8))  # fmt: skip
    factories.make_equipment(org, shop.maria, kind="Caldera", brand="Peisa", skill="heating",
                             last_service_on=datetime.date(2025, 12, 5))  # fmt: skip
    factories.make_equipment(org, shop.juan, kind="Calefactor", skill="heating",
                             last_service_on=datetime.date(2026, 6, 1))  # fmt: skip
    factories.make_equipment(org, shop.maria, kind="Split", brand="Surrey")  # never serviced
    factories.make_equipment(cast.other_org, shop.foreign_customer, kind="Split",
                             last_service_on=datetime.date(2024, 1, 1))  # fmt: skip


def test_every_proactive_intent_has_a_handler() -> None:
    load_handlers()
    assert {"maintenance_due", "follow_up", "seasonal_reminder"} <= set(HANDLERS)


# --- maintenance_due --------------------------------------------------------------------------


def test_maintenance_due_groups_overdue_and_upcoming_with_customers(
    office: Office, equipment: None
) -> None:
    turn = office.run(maintenance_due, "maintenance_due", "proactive")
    assert turn.outcome.success and turn.tools == ["maintenance_due_list"]
    text = turn.text
    assert text.startswith(
        "2 equipos de 2 clientes necesitan mantenimiento (1 vencidos; no cuento los que ya "
        "tienen una visita de ese rubro agendada):"
    )
    assert (
        "Vencidos:\n- Juan Pérez (+54 11 4567-8901): Split BGH, vencido hace 46 días (tocaba el "
        "08/10/2026)"
    ) in text
    assert (
        "Vencen en los próximos 30 días:\n- María González SRL: Caldera Peisa, vence en 12 días "
        "(05/12/2026)"
    ) in text
    assert "Calefactor" not in text  # due in 2027
    assert "¿Les agendo la visita?" in text
    assert_no_foreign_data(text)


def test_maintenance_due_for_one_customer_in_english(office: Office, equipment: None) -> None:
    turn = office.run(maintenance_due, "maintenance_due", "proactive", language="en",
                      customer="María González")  # fmt: skip
    assert "María González SRL: Caldera Peisa, due in 12 days (5 Dec 2026)" in turn.text
    assert "Juan" not in turn.text


def test_maintenance_due_with_nothing_due_says_so(office: Office, shop: Shop) -> None:
    turn = office.run(maintenance_due, "maintenance_due", "proactive")
    assert turn.outcome.success
    assert turn.text.startswith("No hay equipos con el mantenimiento vencido ni por vencer")


def test_booked_equipment_is_left_out(
    office: Office, equipment: None, shop: Shop, cast: Cast
) -> None:
    factories.make_job(cast.org, shop.juan, at(THURSDAY, 9))  # an AC job already booked
    turn = office.run(maintenance_due, "maintenance_due", "proactive")
    assert "Juan Pérez" not in turn.text and "María González SRL" in turn.text


# --- follow_up --------------------------------------------------------------------------------


def _done(cast: Cast, shop: Shop, days_ago: int, **kwargs: Any) -> Job:
    finished = NOW - datetime.timedelta(days=days_ago)
    return factories.make_job(
        cast.org, kwargs.pop("customer", shop.juan), finished - datetime.timedelta(hours=2),
        status="done", completed_at=finished, technician=shop.carlos, **kwargs,
    )  # fmt: skip


def test_follow_up_lists_recent_jobs_without_follow_up_with_phones(
    office: Office, shop: Shop, cast: Cast
) -> None:
    juan = _done(cast, shop, 3)
    maria = _done(cast, shop, 1, customer=shop.maria, service="Carga de gas")
    called = _done(cast, shop, 2)
    services.job_follow_up_record(organisation=cast.org, job=called, note="Todo bien")
    _done(cast, shop, 30)  # too old
    foreign = factories.make_job(cast.other_org, shop.foreign_customer, NOW, status="done",
                                 completed_at=NOW)  # fmt: skip
    turn = office.run(follow_up, "follow_up", "proactive")
    assert turn.outcome.success and turn.tools == ["follow_up_list"]
    lines = turn.text.splitlines()
    assert lines[0] == (
        "2 trabajos terminados en los últimos 14 días sin seguimiento, los más viejos primero:"
    )
    assert lines[1] == (
        f"- #{juan.pk} Service de aire acondicionado — Juan Pérez (+54 11 4567-8901), terminado el "
        "viernes 20/11 07:00 por Carlos Gómez"
    )
    assert lines[2].startswith(f"- #{maria.pk} Carga de gas — María González SRL, terminado")
    assert f"#{called.pk} " not in turn.text and f"#{foreign.pk} " not in turn.text
    assert_no_foreign_data(turn.text)


def test_follow_up_with_nothing_pending_says_so_in_english(office: Office, shop: Shop) -> None:
    turn = office.run(follow_up, "follow_up", "proactive", text="follow up last week's jobs",
                      language="en")  # fmt: skip
    assert turn.text == "No job finished in the last 7 days is waiting for a follow-up."


# --- seasonal_reminder ------------------------------------------------------------------------


def test_the_spring_campaign_targets_air_conditioners_with_a_message(
    office: Office, equipment: None
) -> None:
    turn = office.run(seasonal_reminder, "seasonal_reminder", "proactive")
    assert turn.outcome.success and turn.tools == ["seasonal_targets"]
    text = turn.text
    assert text.startswith(
        "Campaña de aire acondicionado antes del verano: 2 equipos de 2 clientes para "
        "ofrecerles un service (1 sin service nuestro):"
    )
    assert "- María González SRL: Split Surrey (sin service nuestro)" in text
    assert "- Juan Pérez (+54 11 4567-8901): Split BGH (último service 08/10/2025)" in text
    assert "Caldera" not in text  # heating is the autumn campaign
    assert "Mensaje sugerido: «Hola {nombre}, te escribimos de Clima Sur: se viene el calor" in text
    assert_no_foreign_data(text)


def test_out_of_season_it_names_the_next_campaign(office: Office, equipment: None) -> None:
    office.now = datetime.datetime(2026, 7, 15, 10, 0, tzinfo=BA)
    turn = office.run(seasonal_reminder, "seasonal_reminder", "proactive")
    assert turn.outcome.success
    assert turn.text == (
        "Ahora no hay campaña de temporada. La próxima es la de aire acondicionado antes del "
        "verano, que arranca en octubre."
    )


def test_the_autumn_campaign_is_heating_and_gas(office: Office, equipment: None) -> None:
    office.now = datetime.datetime(2027, 4, 5, 10, 0, tzinfo=BA)
    turn = office.run(seasonal_reminder, "seasonal_reminder", "proactive", language="en")
    assert turn.text.startswith("Campaign for heating and gas before winter:")
    assert "Caldera Peisa" in turn.text and "Split" not in turn.text
