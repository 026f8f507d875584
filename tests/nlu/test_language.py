from __future__ import annotations

import pytest

from nlu import detect_language


@pytest.mark.parametrize(
    "text",
    [
        "agendame a Juan mañana",
        "hola",
        "cancelá el turno",
        "pasalo al viernes",
        "¿cuánto sale?",
        "validame el cuit 20-12345678-6",
        "",
    ],
)
def test_it_reads_spanish(text: str) -> None:
    assert detect_language(text) == "es"


@pytest.mark.parametrize(
    "text",
    [
        "book a visit for tomorrow",
        "hello",
        "Has Kevin paid yet?",
        "move the Johnson job to Friday",
        "thanks, bye",
        "never mind",
        "forget it",
        "yes, sure",
    ],
)
def test_it_reads_english(text: str) -> None:
    assert detect_language(text) == "en"


@pytest.mark.parametrize(
    "text",
    [
        "Gas smell at Panadería La Espiga, they need someone right away",
        "Invoice Héctor Rossi for the boiler service once you book it",
        "Send someone to Confitería La Ibérica right now",
    ],
)
def test_proper_names_do_not_decide_the_language(text: str) -> None:
    assert detect_language(text) == "en"


def test_names_known_in_the_records_are_left_out_even_in_lowercase() -> None:
    text = "gas smell at panadería la espiga, they need someone"
    assert detect_language(text, ["Panadería La Espiga"]) == "en"


def test_a_capitalised_request_word_before_a_name_still_counts() -> None:
    assert detect_language("Agendame Juan Pérez") == "es"
    assert detect_language("Hola María José") == "es"
