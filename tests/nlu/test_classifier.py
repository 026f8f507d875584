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
