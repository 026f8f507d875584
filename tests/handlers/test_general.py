"""The general agent's handlers: greeting, farewell, opening hours (open now, in the
organisation's timezone), list prices with IVA, and a polite "out of scope" with what we do."""

from __future__ import annotations

import datetime
from dataclasses import replace

import pytest

from agents.base import HANDLERS, Runner, load_handlers
from agents.general.agent import farewell, greeting, opening_hours, pricing_info, unknown
from agents.models import Agent
from business.models import PriceItem
from tests.conftest import Cast
from tests.handlers.conftest import BA, MONDAY, Shop, assert_no_foreign_data, at
from tests.handlers.office import Office

pytestmark = pytest.mark.django_db
SUNDAY = MONDAY - datetime.timedelta(days=1)


def test_every_general_intent_has_a_handler() -> None:
    load_handlers()
    assert {"greeting", "farewell", "hours", "pricing_info", "unknown"} <= set(HANDLERS)


# --- greeting, farewell -----------------------------------------------------------------------


def test_greeting_is_short_and_offers_examples(office: Office) -> None:
    turn = office.run(greeting, "greeting", "general", text="hola!")
    assert turn.text.startswith("¡Buen día! Soy Capataz, el copiloto de Clima Sur.")
    assert "«agendale a Juan Pérez un service el martes a las 10»" in turn.text
    assert turn.tools == [] and turn.outcome.success


@pytest.mark.parametrize(
    ("utc_hour", "language", "hello"),
    [
        (10, "es", "¡Buen día!"),  # 07:00 in Buenos Aires
        (17, "es", "¡Buenas tardes!"),  # 14:00
        (1, "es", "¡Buenas noches!"),  # 22:00 the evening before
        (5, "es", "¡Buenas noches!"),  # 02:00: night, not morning
        (0, "en", "Good evening!"),  # 21:00
        (12, "en", "Good morning!"),  # 09:00
    ],
)
def test_greeting_follows_the_organisations_local_time_of_day(
    office: Office, utc_hour: int, language: str, hello: str
) -> None:
    office.now = datetime.datetime(2026, 11, 23, utc_hour, tzinfo=datetime.UTC)
    turn = office.run(greeting, "greeting", "general", text="hola", language=language)
    assert turn.text.startswith(f"{hello} ")


def test_greeting_in_english_in_the_afternoon(office: Office) -> None:
    office.now = at(MONDAY, 15)
    turn = office.run(greeting, "greeting", "general", text="hi", language="en")
    assert turn.text.startswith("Good afternoon! I'm Capataz, Clima Sur's copilot.")


def test_farewell_thanks_back_or_says_bye(office: Office) -> None:
    assert office.run(farewell, "farewell", "general", text="gracias, eso es todo").text == (
        "¡De nada! Cualquier cosa, acá estoy."
    )
    assert office.run(farewell, "farewell", "general", text="bye", language="en").text == (
        "Bye! I'm here if you need anything."
    )


# --- hours ------------------------------------------------------------------------------------


def test_hours_before_opening_say_when_it_opens_today(office: Office, cast: Cast) -> None:
    cast.org.phone = "11 4000-1234"
    cast.org.save()
    turn = office.run(opening_hours, "hours", "general", text="¿a qué hora abren?")
    assert turn.tools == ["org_info"]
    assert turn.text == (
        "Nuestro horario: lunes a viernes de 08:00 a 18:00; sábado de 09:00 a 13:00; domingo "
        "cerrado. Ahora (lunes 23/11 07:00) estamos cerrados; abrimos hoy a las 08:00. "
        "Contacto: 11 4000-1234."
    )


def test_hours_while_open(office: Office) -> None:
    office.now = at(MONDAY, 10, 30)
    turn = office.run(opening_hours, "hours", "general", language="en")
    assert "We are open now (Mon 23 Nov 10:30), until 18:00." in turn.text
    assert turn.text.startswith("Our hours: Monday to Friday 08:00–18:00; Saturday 09:00–13:00;")


def test_on_sunday_it_says_closed_and_the_next_opening(office: Office) -> None:
    office.now = datetime.datetime.combine(SUNDAY, datetime.time(15, 0), tzinfo=BA)
    turn = office.run(opening_hours, "hours", "general")
    assert "Ahora (domingo 22/11 15:00) estamos cerrados; abrimos el lunes 23/11 a las 08:00." in (
        turn.text
    )


def test_open_now_is_read_in_the_organisations_timezone(office: Office) -> None:
    # 10:30 UTC is 07:30 in Buenos Aires: before opening, although 10:30 would be open.
    office.now = datetime.datetime(2026, 11, 23, 10, 30, tzinfo=datetime.UTC)
    turn = office.run(opening_hours, "hours", "general")
    assert "Ahora (lunes 23/11 07:30) estamos cerrados; abrimos hoy a las 08:00." in turn.text


def test_hours_of_a_named_day_use_the_organisations_own_hours(office: Office, cast: Cast) -> None:
    cast.org.business_hours = {**cast.org.business_hours, "sat": [], "thu": ["10:00", "14:00"]}
    cast.org.save()
    cast.other_org.business_hours = {"sat": ["07:00", "23:00"]}
    cast.other_org.save()
    saturday = MONDAY + datetime.timedelta(days=5)
    assert (
        "El sábado 28/11 no atendemos."
        in office.run(opening_hours, "hours", "general", date=saturday).text
    )
    thursday = office.run(opening_hours, "hours", "general", date=MONDAY + datetime.timedelta(3))
    assert "El jueves 26/11 atendemos de 10:00 a 14:00." in thursday.text
    assert "jueves de 10:00 a 14:00; viernes de 08:00 a 18:00; sábado a domingo cerrado" in (
        thursday.text
    )


# --- pricing_info -----------------------------------------------------------------------------


def test_pricing_for_a_service_lists_the_matching_items_with_iva(
    office: Office, shop: Shop
) -> None:
    turn = office.run(
        pricing_info, "pricing_info", "general", text="¿cuánto sale instalar un split?",
        service="instalación de split",
    )  # fmt: skip
    assert turn.outcome.success and turn.tools == ["price_list"]
    lines = turn.text.splitlines()
    assert lines[0] == "Precios para «instalación de split»:"
    assert lines[1] == (
        "- Instalación de split hasta 3000 frigorías: $ 150.000,00 + IVA 21% (final $ 181.500,00)"
    )
    assert "sin IVA" in turn.text
    assert_no_foreign_data(turn.text)


def test_pricing_reads_the_service_from_the_text(office: Office, shop: Shop) -> None:
    turn = office.run(
        pricing_info, "pricing_info", "general", text="cuánto cobran la carga de gas?"
    )
    assert turn.text.splitlines()[:2] == [
        "Estos son los precios que coinciden:",
        "- Carga de gas refrigerante: $ 60.000,00 + IVA 10,5% (final $ 66.300,00)",
    ]


def test_an_unknown_service_gets_the_main_items(office: Office, shop: Shop) -> None:
    turn = office.run(
        pricing_info, "pricing_info", "general", text="how much for an elevator repair?",
        language="en", service="elevator repair",
    )  # fmt: skip
    assert turn.tools == ["price_list", "price_list"]
    assert turn.text.startswith("“elevator repair” is not in the price list. These are the main")
    assert "$150,000.00 + IVA 21% ($181,500.00 in total)" in turn.text
    assert_no_foreign_data(turn.text)


def test_a_bare_price_question_lists_the_price_list(office: Office, shop: Shop) -> None:
    turn = office.run(pricing_info, "pricing_info", "general", text="¿precios?")
    assert turn.text.startswith("Nuestra lista de precios:\n- Carga de gas refrigerante")
    assert turn.tools == ["price_list"]


def test_no_price_list_is_a_clear_failure(office: Office, cast: Cast) -> None:
    assert not PriceItem.objects.filter(organisation=cast.org).exists()
    turn = office.run(pricing_info, "pricing_info", "general", text="precios?")
    assert not turn.outcome.success and turn.outcome.error == "empty price list"
    assert "no hay una lista de precios cargada" in turn.text


# --- unknown ----------------------------------------------------------------------------------


def test_unknown_says_it_is_out_of_scope_and_lists_the_enabled_agents(
    office: Office, cast: Cast
) -> None:
    Agent.objects.filter(organisation=cast.org, name="proactive").update(enabled=False)
    turn = office.run(unknown, "unknown", "general", text="¿quién ganó el partido?")
    assert turn.outcome.success
    assert turn.text.startswith("Perdón, eso queda fuera de lo que puedo hacer")
    assert "- técnicos y flota: ausencias, redistribución, despacho y vehículos" in turn.text
    assert "- horarios de atención y lista de precios" in turn.text
    assert "campañas de temporada" not in turn.text  # the disabled agent is not offered


def test_unknown_inside_a_chain_is_one_line(office: Office) -> None:
    turn = office.run(unknown, "unknown", "general", text="y contame un chiste")
    runner = turn.runner
    assert runner is not None
    step = replace(runner.step, index=1)
    outcome = unknown(step, Runner(runner.ctx, runner.chain, runner.agent, step))
    assert outcome.text == "Lo otro que me pediste queda fuera de lo que puedo hacer acá."
