from __future__ import annotations

import pytest

from copilot.understanding import detect_language


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
    ],
)
def test_it_reads_english(text: str) -> None:
    assert detect_language(text) == "en"
