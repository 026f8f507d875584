"""The classifier's own prediction path must agree with scikit-learn's."""

from __future__ import annotations

import numpy as np
from scipy.sparse import hstack
from sklearn.feature_extraction.text import TfidfVectorizer

from nlu.classifier import TEMPERATURE, train_classifier
from nlu.features import featurize
from tests.nlu.training_examples import examples


def test_fast_prediction_matches_scikit_learn() -> None:
    data = examples()
    texts, labels = [e.text for e in data], [e.intent for e in data]
    classifier = train_classifier(texts, labels)
    probe = ["agendame una visita para mañana a las 10", "cuánto debe Gómez?", "hola che"]

    # Rebuild the same model with scikit-learn's own transform and decision function.
    documents = [featurize(t) for t in texts]
    vectorisers = [
        TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), sublinear_tf=True).fit(documents),
        TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, token_pattern=r"(?u)\b\w+\b").fit(
            documents
        ),
    ]
    matrix = hstack([v.transform([featurize(p) for p in probe]) for v in vectorisers]).tocsr()
    margins = matrix @ classifier.weights.T + classifier.intercept
    expected = np.exp((margins - margins.max(axis=1, keepdims=True)) * TEMPERATURE)
    expected /= expected.sum(axis=1, keepdims=True)

    assert np.allclose(classifier.predict_proba(probe), expected)


def test_training_is_deterministic() -> None:
    data = examples()
    texts, labels = [e.text for e in data], [e.intent for e in data]
    first = train_classifier(texts, labels).predict_proba(["pasalo al viernes"])
    second = train_classifier(texts, labels).predict_proba(["pasalo al viernes"])
    assert np.array_equal(first, second)


def test_a_word_one_slip_from_a_trained_word_is_read_as_that_word() -> None:
    texts = ["hacele un presu a Ana", "presu para Juan", "agendame un turno para Juan",
             "despachá a alguien ya", "dispatch a tech now",
             "mandá a alguien por zonas"]  # fmt: skip
    classifier = train_classifier(texts, ["quote", "quote", "book", "send", "send", "send"])
    # Swapped, doubled, dropped and neighbouring letters, each one slip from a trained word.
    for typed, meant in [("persu", "presu"), ("prseu", "presu"), ("pressu", "presu"),
                         ("disaptch", "dispatch"), ("agendme", "agendame"),
                         ("turmo", "turno"), ("zoans", "zonas")]:  # fmt: skip
        assert classifier.mend(f"{typed} para juan") == f"{meant} para juan"
    assert classifier.predict_proba(["persu para juan"])[0].argmax() == classifier.labels.index(
        "quote"
    )
    # Known words, short words, placeholders, a different first or last letter (an ending is
    # grammar: "turnos" is not a slip of "turno") and two slips stay.
    # A letter changed for one far away on the keyboard or added without doubling one is not a
    # slip either ("tuzno", "prexsu").
    for kept in ["presu para juan", "un tur", "zfecha zhora", "bresu", "presa", "turnos",
                 "pesru para", "tuzno", "prexsu"]:  # fmt: skip
        assert classifier.mend(kept) == kept
