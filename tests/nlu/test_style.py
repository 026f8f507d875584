"""How a customer writes and what they say they prefer (nlu/style.py): plain functions."""

from __future__ import annotations

import pytest

from nlu.style import Preference, read_brevity, read_register, stated_preference, to_usted


@pytest.mark.parametrize(
    ("text", "register"),
    [
        ("¿Podés venir el martes? Avisame", "voseo"),
        ("Buenas tardes, quisiera saber si usted podría venir", "usted"),
        ("hola, ¿puedes venir mañana?", "tuteo"),
        ("tu técnico llegó tarde", ""),  # "tu" the possessive is not tuteo
        ("can you come on Tuesday?", ""),
        ("ok", ""),
    ],
)
def test_it_reads_the_register(text: str, register: str) -> None:
    assert read_register(text) == register


def test_brevity_needs_a_few_messages_and_a_clear_length() -> None:
    assert read_brevity(["ok", "dale, gracias", "sí"]) == "brief"
    assert read_brevity(["palabra " * 40, "otra " * 35]) == "detailed"
    assert read_brevity(["ok"]) == ""  # one message tells nothing
    middling = "una frase de unas doce palabras más o menos larga, ni corta ni"
    assert read_brevity([middling, middling]) == ""


@pytest.mark.parametrize(
    ("text", "preference"),
    [
        ("Gómez prefiere los martes a la mañana", Preference((1,), "morning")),
        ("I can only do Thursdays", Preference((3,), "")),
        ("suele pedir por la tarde", Preference((), "afternoon")),
        ("agendá a Gómez el martes", None),  # a request, not a preference
        ("prefiere que lo llamen antes", None),  # a preference, but of no day or time
    ],
)
def test_it_reads_a_stated_preference(text: str, preference: Preference | None) -> None:
    assert stated_preference(text) == preference


def test_a_voseo_reply_is_said_in_usted() -> None:
    text = "No me dijiste el día. Te propongo estos turnos libres:\n1. …\n¿Cuál te sirve?"
    assert to_usted(text) == (
        "No me dijo el día. Le propongo estos turnos libres:\n1. …\n¿Cuál le sirve?"
    )
