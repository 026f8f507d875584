"""Reading whether a text claims an action was done (the llm engine's check of a step's text)."""

from __future__ import annotations

import pytest

from nlu.claims import claims_done


@pytest.mark.parametrize(
    "text",
    [
        "Listo, te agendé a Pérez para el jueves.",
        "¡Listo! Turno reservado.",
        "El trabajo quedó agendado para mañana 10 hs.",
        "Se agendó el trabajo #12.",
        "Perfecto, ya lo agende.",
        "Ya cancelé el trabajo del lunes.",
        "Hecho: el cliente fue registrado.",
        'A "held": true, so the task is completed.',
        "I've booked the job for Thursday.",
        "The job is booked.",
        "Done! Anything else?",
        "Invoice issued: I have generated it just now.",
    ],
)
def test_claims_of_done_work_are_read_in_both_languages(text: str) -> None:
    assert claims_done(text)


@pytest.mark.parametrize(
    "text",
    [
        "No pude agendar el trabajo.",
        "¿Querés que lo agende?",
        "Todavía no está agendado.",
        "Hay dos técnicos libres el jueves: Juan y Ana.",
        "No hay técnicos libres el jueves, ¿probamos el viernes?",
        "I couldn't book it: no technician is free.",
        "Which time works for you?",
        "Should I cancel it?",
        "El trabajo no fue cancelado.",
        "",
    ],
)
def test_questions_negations_and_plain_facts_claim_nothing(text: str) -> None:
    assert not claims_done(text)
