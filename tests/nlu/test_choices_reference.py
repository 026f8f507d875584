"""Which offered option a reply picks (nlu/choices.py), and whom a question is about
(nlu/reference.py)."""

from __future__ import annotations

import pytest

from nlu.choices import option_lines, pick
from nlu.reference import organisation_wide, points_at_subject, refers_to_existing

SLOTS = """El viernes 04/12 hay turnos libres:
1. viernes 04/12 08:00 con Ramiro Giménez
2. viernes 04/12 09:00 con Diego Fernández
3. viernes 04/12 11:00 con Lucas Romero
4. viernes 04/12 12:00 con Diego Fernández"""


@pytest.mark.parametrize(
    ("reply", "index"),
    [
        ("el segundo", 1),
        ("1", 0),
        ("the first one", 0),
        ("el último", 3),
        ("dale, el de las 11 con Lucas", 2),
        ("el de Ramiro", 0),
        ("la opción 4", 3),
    ],
)
def test_a_reply_picks_the_option_it_names(reply: str, index: int) -> None:
    assert pick(reply, option_lines(SLOTS)) == index


@pytest.mark.parametrize("reply", ["el de Diego", "el sexto", "ver la disponibilidad", "15"])
def test_an_ambiguous_or_foreign_reply_picks_nothing(reply: str) -> None:
    assert pick(reply, option_lines(SLOTS)) is None


def test_a_reading_is_picked_by_its_own_words() -> None:
    assert pick("ver la disponibilidad", ["asignar el vehículo", "ver la disponibilidad"]) == 1


@pytest.mark.parametrize(
    "text",
    [
        "quien nos debe plata?",
        "Who has overdue invoices?",
        "que vehiculos tenemos disponibles mañana?",
        "hay facturas vencidas?",
    ],
)
def test_organisation_wide_questions(text: str) -> None:
    assert organisation_wide(text)


@pytest.mark.parametrize(
    "text",
    ["¿y ella cuánto nos debe?", "¿cuánto debe?", "what does she owe us?", "agendale el viernes"],
)
def test_questions_about_the_subject_are_not_organisation_wide(text: str) -> None:
    assert not organisation_wide(text)


def test_a_demonstrative_points_at_the_subject_but_an_article_does_not() -> None:
    assert points_at_subject("¿quién es el técnico de este cliente?")
    assert not points_at_subject("el viernes a la tarde")


@pytest.mark.parametrize(
    "text",
    [
        "mandame la factura de Graciela Ibarra, la ultima",
        "mandame la última factura de Graciela",
        "la factura anterior de Ortiz",
        "pasame esa factura",
        "la de ayer",
        "send me Walker's last invoice",
        "send me the latest invoice for Walker",
        "that invoice again, please",
    ],
)
def test_a_message_can_point_at_an_invoice_already_issued(text: str) -> None:
    assert refers_to_existing(text)


@pytest.mark.parametrize(
    "text",
    [
        "facturale a Gómez el service de ayer",
        "facturá la última visita de Ortiz",  # the last *visit*: a new invoice may be for it
        "issue an invoice for the last install",
        "just send me the invoice for the Walker install",
        "Invoice Linda Carter for yesterday's boiler service, 95k",
        "armale la factura de la visita de la semana pasada a Sergio Molina",
        "make an invoice",
    ],
)
def test_a_new_document_for_past_work_is_not_an_existing_one(text: str) -> None:
    assert not refers_to_existing(text)
