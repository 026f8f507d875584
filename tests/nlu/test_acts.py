"""Dialogue acts (nlu/acts.py): the shipped model on the messages the issue quotes, and the
family split that keeps dev and test phrasings unseen."""

from __future__ import annotations

import pytest

from nlu.acts import (
    ACTS,
    cues,
    imperative,
    load_corpus,
    noisy,
    read_act,
    read_with,
    split,
    split_of,
    tells_the_past,
    train,
    wants,
)


@pytest.mark.parametrize(
    ("text", "act"),
    [
        ("que vehiculos tenemos disponibles mañana?", "question"),
        ("quien nos debe plata?", "question"),
        ("Who has overdue invoices?", "question"),
        ("agendale a Graciela Ibarra un service de aire el martes a las 10", "request"),
        ("me agendás a Pérez el martes?", "request"),
        ("mejor a las 15", "correction"),
        ("no, el miércoles", "correction"),
        ("dale, el de las 11 con Lucas", "choice"),
        ("el segundo", "choice"),
        ("the first one", "choice"),
        ("Martín está enfermo hoy", "statement"),
    ],
)
def test_it_reads_the_act_of_each_quoted_message(text: str, act: str) -> None:
    assert read_act(text).act == act


@pytest.mark.parametrize(
    ("text", "act"),
    [
        # a question mark does not make a question: a polite request, a request to read
        ("¿me agendás a Correa el jueves a las 10?", "request"),
        ("¿podés fijarte si pagó Pérez?", "request"),
        ("¿hay turno el jueves?", "question"),
        ("hay turno mañana a la tarde?", "question"),
        # "hay" opens statements too
        ("hay una pérdida de gas en Cabildo 500", "statement"),
        ("no hay agua caliente desde ayer", "statement"),
        # a need is a request; what happened, or what someone said, a statement
        ("necesito un técnico mañana", "request"),
        ("I need a plumber at the Rossi place", "request"),
        ("el técnico no vino", "statement"),
        ("dice Gómez que el técnico no vino", "statement"),
        # indirect questions
        ("quería saber si ya pagó Ruiz", "question"),
        ("me decís cuánto debe Gómez?", "question"),
        ("do you know if the van is back?", "question"),
        # corrections and choices
        ("perdón, era Gómez", "correction"),
        ("actually make it 3pm", "correction"),
        ("eh bueno no, perdón, era el viernes no el jueves", "correction"),
        ("la opción 2", "choice"),
        ("the earlier one", "choice"),
        ("el que tengas primero", "choice"),
        # typed fast
        ("q turnos hay mñn", "question"),
        ("agendame a perez pls mñn 10hs", "request"),
    ],
)
def test_it_reads_the_hard_pairs(text: str, act: str) -> None:
    assert read_act(text).act == act


def test_the_cues_keep_apart_what_only_looks_alike() -> None:
    assert "cuewh" not in cues("hay olor a quemado en el tablero")
    assert "cueverbopen" in cues("hay olor a quemado en el tablero")
    assert "cuecorr" in cues("no, el miércoles")
    assert "cuecorr" not in cues("no hay agua caliente")
    assert "cueindirect" in cues("quería saber si ya pagó")
    assert "cuewrite" in cues("¿se puede pasar lo de Ruiz al viernes?")
    assert "cuewrite" not in cues("el pasillo está mojado")


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        # after an article the word is a noun: "factura" is also the voseo "facturá"
        ("llegó la factura de Edesur", False),
        ("factura a Romero 65 lucas", True),
        # after a pronoun or "ya" the verb is conjugated: the voseo imperative takes them after
        ("gracias, la factura ya la recibí", False),
        ("el presupuesto de Gómez ya lo mandé ayer", False),
        ("mandalo ya", True),
        ("poné a Lucas el jueves", True),
        ("el técnico está en camino", False),
    ],
)
def test_an_article_makes_a_noun_and_a_pronoun_a_conjugated_verb(text: str, asks: bool) -> None:
    assert imperative(text) is asks
    assert ("cueimper" in cues(text)) is asks


def test_a_write_word_after_an_article_is_no_write_verb() -> None:
    assert "cuewrite" not in cues("llegó la factura de Edesur")
    assert "cuewrite" in cues("factura a Romero 65 lucas")


@pytest.mark.parametrize(
    ("text", "past"),
    [
        ("llegó la factura de Edesur", True),
        ("gracias, la factura ya la recibí", True),
        ("los de Ruiz pagaron ayer", True),
        ("agendá a Pérez el jueves", False),
        ("el turno del jueves de Pérez", False),
        ("mañana hay turno con Pérez", False),
    ],
)
def test_it_tells_the_past_by_the_verb(text: str, past: bool) -> None:
    assert tells_the_past(text) is past


def test_reports_of_what_happened_are_not_requests() -> None:
    """Set D's "llegó la factura de Edesur" read as a request 0.99 (the noun "factura" counted
    as the verb "facturá"), and a held-out goodbye as a request 0.72."""
    for text in ("llegó la factura de Edesur", "gracias, la factura ya la recibí, nada más, chau!"):
        assert read_act(text).act == "statement", text
        assert read_act(text).scores["request"] < 0.1, text


def test_someone_wanting_something_is_a_request_passed_on() -> None:
    assert wants("la señora Lamas nunca nos llamó, quiere un service el martes")
    assert wants("the customer needs it on Friday")
    assert not wants("la señora Lamas nunca nos llamó")


def test_held_out_families_stay_above_the_measured_floor() -> None:
    """Deterministic (newton-cg on a fixed corpus): trained on the train families only, the
    dev and test families are read at least this well (bench/acts.py measured 0.867 and 0.855)."""
    corpus = load_corpus()
    model = train(split(corpus, "train"))
    for which, floor in (("dev", 0.86), ("test", 0.82)):
        cases = [(v, e.act) for e in split(corpus, which) for v in noisy(e.text)]
        right = sum(read_with(model, text).act == act for text, act in cases)
        assert right / len(cases) >= floor, which


def test_a_family_lives_in_one_split_only() -> None:
    corpus = load_corpus()
    for which in ("train", "dev", "test"):
        assert split(corpus, which), which
    assert all(split_of(example.family) == split_of(example.family) for example in corpus)
    families = {example.family: example.act for example in corpus}
    assert set(families.values()) == set(ACTS)
    assert len(corpus) >= 1100 and len(families) >= 200


def test_its_confidence_is_a_probability() -> None:
    reading = read_act("que turnos hay el viernes?")
    assert 0.0 < reading.confidence <= 1.0
    assert abs(sum(reading.scores.values()) - 1.0) < 1e-6


def test_hace_with_a_time_is_how_long_ago() -> None:
    assert not imperative("se les cortó el aire hace dos horas")
    assert not imperative("hace calor en la oficina")
    assert not imperative("ya quedó cargado, no hace falta que hagas nada")
    assert imperative("hace la factura de Gómez")
