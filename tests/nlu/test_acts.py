"""Dialogue acts (nlu/acts.py): the shipped model on the messages the issue quotes, and the
family split that keeps dev and test phrasings unseen."""

from __future__ import annotations

import pytest

from nlu.acts import ACTS, load_corpus, read_act, split, split_of


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


def test_a_family_lives_in_one_split_only() -> None:
    corpus = load_corpus()
    for which in ("train", "dev", "test"):
        assert split(corpus, which), which
    assert all(split_of(example.family) == split_of(example.family) for example in corpus)
    families = {example.family: example.act for example in corpus}
    assert set(families.values()) == set(ACTS)


def test_its_confidence_is_a_probability() -> None:
    reading = read_act("que turnos hay el viernes?")
    assert 0.0 < reading.confidence <= 1.0
    assert abs(sum(reading.scores.values()) - 1.0) < 1e-6
