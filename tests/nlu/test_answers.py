"""The language-only half of clarification (O8): what kind of reply follows a question."""

from __future__ import annotations

import pytest

from nlu.answers import (
    content_words,
    dateish,
    dont_know,
    garbage,
    names_option,
    never_mind,
    options_of,
    points_at_option,
    timeish,
    yes_or_no,
)

JOBS = (
    "Hay 3 trabajos abiertos de Juan Pérez:\n"
    "- #12 Instalación de split — Juan Pérez, jueves 26/11 10:00, con Diego Fernández\n"
    "- #15 Service de caldera — Juan Pérez, viernes 27/11 08:00, con Martín Sosa\n"
    "- #19 Reparación de pérdida de gas — Juan Pérez, lunes 30/11 09:00, con Diego Fernández\n"
    "¿Cuál es?"
)


@pytest.mark.parametrize(
    "text",
    ["olvidalo", "Olvídalo.", "dejá", "dejalo", "no importa", "nada", "never mind",
     "Forget it!", "skip it", "cancelá eso", "cancel that", "dejalo así"],
)  # fmt: skip
def test_cancel_words_drop_the_question(text: str) -> None:
    assert never_mind(text)


@pytest.mark.parametrize(
    "text", ["cancelá el trabajo #12", "cancelalo el jueves", "dejá el jueves", "nada de gas"]
)
def test_a_request_is_not_a_cancel_word(text: str) -> None:
    assert not never_mind(text)


def test_with_no_question_open_cancel_that_cancels_what_was_done() -> None:
    assert not never_mind("cancelá eso", question_open=False)
    assert not never_mind("cancel that", question_open=False)
    assert never_mind("olvidalo", question_open=False)


@pytest.mark.parametrize(
    "text",
    ["no sé", "No se", "ni idea", "mmm no sé", "la verdad no sé", "no tengo idea", "qué sé yo",
     "I don't know", "I dont know", "no idea", "not sure", "idk", "no me acuerdo",
     "NO SÉ NADA!!!", "I don't know anything"],
)  # fmt: skip
def test_dont_know(text: str) -> None:
    assert dont_know(text)


@pytest.mark.parametrize("text", ["no sé si el jueves o el viernes", "no, el segundo", "nose"])
def test_a_reply_with_more_than_dont_know_is_not_only_that(text: str) -> None:
    assert not dont_know(text)


@pytest.mark.parametrize(
    "text",
    ["<div><p>asdf</p></div>", "&nbsp;&nbsp;", "<script>alert(1)</script>", "asdfghjkl",
     "qwrtzp xkcdv", "#$%&/()=", "sdfg hjkl"],
)  # fmt: skip
def test_garbage(text: str) -> None:
    assert garbage(text)


@pytest.mark.parametrize(
    "text",
    ["el del jueves", "Juan Pérez", "#12", "2", "a las 10hs", "Schwarz", "sí", "👍",
     "Av. Triunvirato 5655", "AD882TR"],
)  # fmt: skip
def test_real_replies_are_not_garbage(text: str) -> None:
    assert not garbage(text)


def test_the_options_are_the_lines_of_the_list() -> None:
    assert len(options_of(JOBS)) == 3
    assert options_of("¿Qué trabajo?") == []


@pytest.mark.parametrize(
    "reply", ["el segundo", "2", "#15", "el último", "cualquiera", "the first one", "any"]
)
def test_a_place_an_id_or_any_points_at_an_option(reply: str) -> None:
    assert points_at_option(reply, JOBS)


@pytest.mark.parametrize("reply", ["7", "#99", "el de Juan", "no sé", "buscá al cliente Pérez"])
def test_other_replies_do_not_point_at_an_option(reply: str) -> None:
    assert not points_at_option(reply, JOBS)


@pytest.mark.parametrize("reply", ["el del jueves", "el de la caldera", "el de Martín", "el de 09"])
def test_words_of_an_option_name_it(reply: str) -> None:
    assert names_option(reply, JOBS)


@pytest.mark.parametrize("reply", ["el del martes", "el de la heladera", "dale", "el de la"])
def test_words_of_no_option_name_none(reply: str) -> None:
    assert not names_option(reply, JOBS)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [("sí", True), ("Sí, es el mismo", True), ("no, es otro", True), ("es uno nuevo", True),
     ("yes", True), ("it's a new one", True), ("el jueves", False), ("Marta", False)],
)  # fmt: skip
def test_yes_or_no(reply: str, expected: bool) -> None:
    assert yes_or_no(reply) is expected


@pytest.mark.parametrize(
    ("reply", "date", "time"),
    [("el jueves", True, False), ("mañana a las 10", True, True), ("15/12", True, False),
     ("el 15", True, False), ("next week", True, False), ("10hs", False, True),
     ("a la tarde", False, True), ("3pm", False, True), ("Marta Quiroga", False, False)],
)  # fmt: skip
def test_dates_and_times(reply: str, date: bool, time: bool) -> None:
    assert (dateish(reply), timeish(reply)) == (date, time)


def test_content_words_leave_fillers_out() -> None:
    assert content_words("dale, el de Marta por favor") == ["marta"]
    assert content_words("sí, ese") == []
