"""Entity extraction in Spanish and English, against Wednesday 18 Nov 2026 (Buenos Aires)."""

from __future__ import annotations

import datetime
import decimal
from dataclasses import replace

import pytest

from nlu import Context, Entities, Vocabulary, extract_entities
from tests.nlu.conftest import make_context
from tests.nlu.training_examples import specs

SPECS = specs()

D = datetime.date


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("agendalo para hoy", D(2026, 11, 18)),
        ("mañana a la mañana", D(2026, 11, 19)),
        ("pasado mañana", D(2026, 11, 20)),
        ("el jueves", D(2026, 11, 19)),
        ("el lunes que viene", D(2026, 11, 23)),
        ("la semana que viene", D(2026, 11, 23)),
        ("el martes de la semana que viene", D(2026, 11, 24)),
        ("el 15/12", D(2026, 12, 15)),
        ("el 15/1", D(2027, 1, 15)),
        ("15 de diciembre", D(2026, 12, 15)),
        ("el viernes 4", D(2026, 12, 4)),
        ("martes 24 a las 14", D(2026, 11, 24)),
        ("pasá la visita del jueves al lunes", D(2026, 11, 23)),
    ],
)
def test_spanish_dates(ctx: Context, text: str, expected: datetime.date) -> None:
    assert extract_entities(text, ctx).date == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("today", D(2026, 11, 18)),
        ("tomorrow at 3pm", D(2026, 11, 19)),
        ("next Friday", D(2026, 11, 20)),
        ("next Friday the 4th", D(2026, 12, 4)),
        ("Friday the 27th", D(2026, 11, 27)),
        ("on Dec 2nd", D(2026, 12, 2)),
        ("the 15th of December", D(2026, 12, 15)),
        ("reschedule the visit from tomorrow to Saturday", D(2026, 11, 21)),
        # A weekday that names the date written after it is one date, not two.
        ("book it on Monday, December 7", D(2026, 12, 7)),
        ("book it Tuesday Dec. 1 at 10am", D(2026, 12, 1)),
    ],
)
def test_english_dates(ctx: Context, text: str, expected: datetime.date) -> None:
    assert extract_entities(text, ctx).date == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mañana 10hs", "10:00"),
        ("a las 10 hs", "10:00"),
        ("a las 10", "10:00"),
        ("a las 3", "15:00"),
        ("a las 15:30", "15:30"),
        ("9 y media", "09:30"),
        ("al mediodía", "12:00"),
        ("a las 4 de la tarde", "16:00"),
        ("mañana 8.30", "08:30"),
        ("3pm", "15:00"),
        ("at 10:30 am", "10:30"),
        ("at noon", "12:00"),
        ("a la tarde", None),
        ("in the morning", None),
        ("el 15/12 y el 16/12", None),
        # Dictated, in words.
        ("agendale el viernes a las once", "11:00"),
        ("pasalo a las cuatro de la tarde", "16:00"),
        ("tipo nueve y media", "09:30"),
        ("una vez que lo agendes", None),
        ("son las once de la noche", None),  # no "a las": not a time to book
    ],
)
def test_times(ctx: Context, text: str, expected: str | None) -> None:
    assert extract_entities(text, ctx).time == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ponele 15 lucas", "15000"),
        # Said in words, as a dictated note writes them.
        ("son, este, noventa y cinco mil", "95000"),
        ("ponele ciento ochenta mil", "180000"),
        ("dos mil quinientos pesos", "2500"),
        ("veinticinco lucas", "25000"),
        ("trescientos cincuenta mil más IVA", "350000"),
        ("son tres equipos, el dos de diciembre a las diez", None),
        ("dos tres mil", None),  # not one number
        ("un presupuesto de 210k", "210000"),
        ("$640.000 más IVA", "640000"),
        ("1,5 palos", "1500000"),
        ("$ 12.500,50", "12500.50"),
        ("facturale 8500", "8500"),
        ("50 mil pesos", "50000"),
        ("around $1,200", "1200"),
        ("quote it at 640k", "640000"),
        ("presupuesto x 3 equipos de 6000 frigorías", None),
        ("vive en Corrientes 1234", None),
    ],
)
def test_amounts(ctx: Context, text: str, expected: str | None) -> None:
    amount = extract_entities(text, ctx).amount
    assert (str(Entities(amount=amount).as_eval_dict().get("amount")) if amount else None) == (
        expected
    )


def test_amount_is_a_decimal(ctx: Context) -> None:
    assert extract_entities("$ 12.500,50", ctx).amount == decimal.Decimal("12500.50")


@pytest.mark.parametrize(
    ("text", "customer"),
    [
        ("agendá una visita para Marta Giménez el viernes", "Marta Giménez"),
        ("hacele un presupuesto a la Sra. Ledesma", "Ledesma"),
        ("facturale a Panadería La Espiga", "Panadería La Espiga"),
        ("el cliente juan perez pide un turno", "juan perez"),
        ("agendá a Gómez y Hnos. para mañana", "Gómez y Hnos."),
        ("Book a boiler service for Mrs. Johnson", "Johnson"),
        ("Update Greg Hall's email", "Greg Hall"),
        ("pull up everything we have on Kevin O'Brien", "Kevin O'Brien"),
        ("put Tom and Ann Walker down for Monday", "Tom and Ann Walker"),
    ],
)
def test_customers_as_written(ctx: Context, text: str, customer: str) -> None:
    entities = extract_entities(text, ctx)
    assert entities.customer == customer
    assert not entities.customer_matched


@pytest.mark.parametrize(
    ("text", "technician"),
    [
        ("Ramón está enfermo", "Ramón"),
        ("fijate si Pablo está libre mañana", "Pablo"),
        ("mandá al técnico Sergio", "Sergio"),
        ("Carlos called in sick today", "Carlos"),
        ("Is Pedro available tomorrow?", "Pedro"),
        ("asignale la camioneta 3 a Leandro", "Leandro"),
    ],
)
def test_technicians_as_written(ctx: Context, text: str, technician: str) -> None:
    assert extract_entities(text, ctx).technician == technician


def test_names_snap_to_the_vocabulary() -> None:
    vocabulary = Vocabulary(
        customers=("Juan Pérez", "María González", "Juan Gómez"),
        technicians=("Pedro Ramírez",),
    )
    ctx = make_context(vocabulary)
    entities = extract_entities("agendale a juan perez y que vaya Pedro", ctx)
    assert (entities.customer, entities.customer_matched) == ("Juan Pérez", True)
    assert (entities.technician, entities.technician_matched) == ("Pedro Ramírez", True)
    # "Juan" alone could be two customers on file: not guessed.
    assert not extract_entities("agendale a Juan", ctx).customer_matched
    # A different person who shares a first name is not snapped to the record.
    assert extract_entities("presupuesto para María Suárez", ctx).customer == "María Suárez"


def test_a_small_typo_still_matches_the_vocabulary() -> None:
    ctx = make_context(Vocabulary(customers=("Verónica Salas",)))
    entities = extract_entities("agenda a Veronica Sallas el lunes", ctx)
    assert (entities.customer, entities.customer_matched) == ("Verónica Salas", True)


@pytest.mark.parametrize(
    ("text", "service"),
    [
        ("instalación de split el viernes", "instalación de split"),
        ("un service de caldera", "service de caldera"),
        ("la carga de gas", "carga de gas"),
        ("cambio de termotanque", "cambio de termotanque"),
        ("Book a boiler service", "boiler service"),
        ("schedule an AC installation", "ac installation"),
        ("a drain cleaning on Friday", "drain cleaning"),
    ],
)
def test_services(ctx: Context, text: str, service: str) -> None:
    assert extract_entities(text, ctx).service == service


def test_cuit_is_normalised(ctx: Context) -> None:
    assert extract_entities("registralo con CUIT 30712345671", ctx).cuit == "30-71234567-1"


def test_the_whole_message_leaves_out_a_key_with_two_values(ctx: Context) -> None:
    text = "cancelá la visita del jueves y agendá una nueva para el 3/12"
    assert extract_entities(text, ctx).date is not None  # one request reads its own date
    assert extract_entities(text, ctx, whole_message=True).date is None


def test_a_move_keeps_its_target_date_in_the_whole_message(ctx: Context) -> None:
    text = "pasá el turno de Gómez del jueves al lunes"
    entities = extract_entities(text, ctx, whole_message=True, intents=["reschedule"], specs=SPECS)
    assert entities.date == D(2026, 11, 23)
    # The registry's date_is says so: a request with a date of its own leaves both out.
    own = SPECS | {"reschedule": replace(SPECS["reschedule"], date_is="own")}
    assert (
        extract_entities(text, ctx, whole_message=True, intents=["reschedule"], specs=own).date
        is None
    )


def test_eval_dict_has_only_values(ctx: Context) -> None:
    entities = extract_entities("mañana 10hs, 15 lucas", ctx)
    assert entities.as_eval_dict() == {"date": "2026-11-19", "time": "10:00", "amount": "15000"}


@pytest.mark.parametrize(
    ("text", "job_id", "amount"),
    [
        ("cancelá el trabajo #265", 265, None),
        ("cancelá el trabajo 265", 265, None),
        ("cancelar trabajo #265", 265, None),
        ("el #239", 239, None),
        ("reschedule job no. 12 to Friday", 12, None),
        ("facturá el trabajo #180 por $15000", 180, decimal.Decimal("15000")),
        ("el trabajo 10 de marzo", None, None),
        ("el trabajo de las 10 hs", None, None),
        ("cancelá el #265 y el #266", None, None),  # two jobs named: neither is guessed
    ],
)
def test_a_job_named_by_its_number(
    ctx: Context, text: str, job_id: int | None, amount: decimal.Decimal | None
) -> None:
    entities = extract_entities(text, ctx)
    assert entities.job_id == job_id
    assert entities.amount == amount


@pytest.mark.parametrize(
    ("text", "job_id", "amount"),
    [
        ("facturá el 362", 362, None),  # once an invoice of $362
        ("el 362 pasalo al jueves", 362, None),
        ("trabajo nro 362", 362, None),
        ("job 362", 362, None),
        ("cancel job #362 please", 362, None),
        ("facturale el 15000 a Juan", None, None),  # a bare 5-digit amount is not a job...
        ("cobrale el 362 pesos", None, decimal.Decimal("362")),  # ...nor "362 pesos"
        ("el 15 de marzo del 2027", None, None),  # a year is not a job
        ("vive en Cabildo al 500", None, None),  # "al 500" is an address
    ],
)
def test_a_job_named_by_a_bare_number(
    ctx: Context, text: str, job_id: int | None, amount: decimal.Decimal | None
) -> None:
    entities = extract_entities(text, ctx)
    assert entities.job_id == job_id
    if amount is not None or job_id is not None:
        assert entities.amount == amount


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("agendá a Juan el 31/11 a las 10", "31/11"),
        ("agendalo el 31/02", "31/02"),
        ("book it on 2/30", "2/30"),
        ("el 30 de febrero", "30 de febrero"),
        ("pasalo al 31 de noviembre", "31 de noviembre"),
        ("el 29/02/2027", "29/02/2027"),
    ],
)
def test_an_impossible_date_is_kept_as_written_and_never_becomes_a_date(
    ctx: Context, text: str, written: str
) -> None:
    entities = extract_entities(text, ctx)
    assert entities.date is None
    assert entities.impossible_date == written
    assert entities.amount is None


def test_a_real_date_next_to_an_impossible_one_wins(ctx: Context) -> None:
    entities = extract_entities("el 31/11 no existe, el 30/11 entonces", ctx)
    assert entities.date == D(2026, 11, 30)


@pytest.mark.parametrize("text", ["el 29/02/2028", "el 30/11", "31 de diciembre"])
def test_a_possible_date_is_not_impossible(ctx: Context, text: str) -> None:
    entities = extract_entities(text, ctx)
    assert entities.date is not None
    assert entities.impossible_date is None


@pytest.mark.parametrize(
    ("text", "part"),
    [
        ("libres mañana a la tarde", "afternoon"),
        ("¿qué hay libre el jueves por la mañana?", "morning"),
        ("mañana a la mañana", "morning"),
        ("agendalo esta tarde", "afternoon"),
        ("a la noche puede alguien?", "evening"),
        ("anything free tomorrow afternoon?", "afternoon"),
        ("free slots on Friday morning", "morning"),
        ("this evening", "evening"),
        ("tonight", "evening"),
        ("libres mañana", None),  # "mañana" alone is a day
        ("los turnos de mañana", None),
        ("buenas tardes, ¿hay lugar el jueves?", None),  # a greeting
        ("good morning, any slots tomorrow?", None),
        ("a la mañana o a la tarde", None),  # two parts: neither
        # A form's answers (a WhatsApp flow's "field: value" lines, joined or not).
        ("fecha visita: 2026-12-03\nfranja: tarde\nequipos: split", "afternoon"),
        ("fecha visita: 2026-12-03 franja: tarde equipos: split living", "afternoon"),
        ("turno: mañana", "morning"),
        ("horario preferido: por la noche.", "evening"),
        ("fecha: mañana", None),  # tomorrow, under a date's field
        ("ojo: tarde o temprano se rompe", None),  # not a field's whole value
    ],
)
def test_part_of_day(ctx: Context, text: str, part: str | None) -> None:
    entities = extract_entities(text, ctx)
    assert entities.part_of_day == part


def test_a_part_of_day_is_not_a_time(ctx: Context) -> None:
    entities = extract_entities("libres mañana a la tarde", ctx)
    assert entities.time is None
    assert entities.date == D(2026, 11, 19)


def test_dates_typed_fast(ctx: Context) -> None:
    tomorrow = D(2026, 11, 19)
    for text in ("dale la fiorino a martin mñn", "q hay libre mñna", "book ann tmrw 3pm"):
        assert extract_entities(text, ctx).date == tomorrow, text
    # "a la mñn" is the morning, as "a la mañana" is.
    read = extract_entities("q tecnicos hay libres mñn a la mñn?", ctx)
    assert (read.date, read.part_of_day) == (tomorrow, "morning")


@pytest.mark.parametrize(
    ("text", "date", "time"),
    [
        ("agendale a Juan Pérez el martes, no, mejor el jueves a las 10", D(2026, 11, 19), "10:00"),
        ("agendale a Pérez el martes, no, perdón, el jueves", D(2026, 11, 19), None),
        ("book Ana Ruiz on Tuesday, scratch that, Thursday at 3pm", D(2026, 11, 19), "15:00"),
        ("agendale a Pérez el martes a las 9, no, perdón, a las 11", D(2026, 11, 24), "11:00"),
        # Nothing taken back: two days are two days, two hours stay with their day.
        ("agendale a Pérez el martes y el jueves", None, None),
        ("agendale a Pérez el martes a las 9, a las 11", D(2026, 11, 24), "09:00"),
    ],
)
def test_a_value_taken_back_is_replaced_by_the_one_meant(
    ctx: Context, text: str, date: datetime.date | None, time: str | None
) -> None:
    entities = extract_entities(text, ctx, whole_message=True, intents=["book_job"], specs=SPECS)
    assert (entities.date, entities.time) == (date, time)
