"""Is a message about the business at all? A logistic regression on the encoder's vectors.

The intent classifier reads words: "¿el técnico de la selección va a renovar?" has the trade's
word and goes to the technicians' agent, "agendá en mi calendario el cumple de mi vieja" opens
with a booking verb. The encoder's vectors say what the message is about, so this model learns
"out of scope" from the registry's `unknown` examples (and the corpus's out-of-scope lines)
against every other intent's examples, in Spanish and English at once.

Measured on the corpus's held-out families (bench/voices.py), it is what moves hard negatives;
nlu.router asks it once per message, and only where a word-level reading would act.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nlu import encoder

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

# Regularisation, chosen on the corpus's dev split (C 1: OOS caught fewer; 100: more in-scope
# lines flagged on the golden set).
C = 10.0


@dataclass(frozen=True)
class ScopeModel:
    weights: tuple[float, ...]
    bias: float

    def out_of_scope(self, text: str) -> float | None:
        """The probability that `text` is outside the business (0..1); None when the encoder
        fails (the reading then stands as the words made it: a turn never fails on this)."""
        try:
            vector = encoder.embed_one(text)
        except Exception:  # the C engine or its model file: no opinion rather than no answer
            logger.warning("the encoder failed; reading without the scope model", exc_info=True)
            return None
        return self.probability(vector)

    def probability(self, vector: np.ndarray) -> float:
        import numpy as np

        margin = float(np.dot(np.asarray(self.weights, dtype=np.float32), vector)) + self.bias
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, margin))))


def train_scope(texts: Sequence[str], outside: Sequence[bool]) -> ScopeModel | None:
    """Fit on texts flagged outside (True) or about the business; None without both kinds or
    without the encoder. Classes are balanced: the registry has far more in-scope examples."""
    if not encoder.available() or len(set(outside)) < 2:
        return None
    from sklearn.linear_model import LogisticRegression

    try:
        vectors = encoder.embed(list(texts), keep=True)
    except Exception:  # a router without a scope model still reads (and trains) as before
        logger.warning("the encoder failed; no scope model", exc_info=True)
        return None
    model = LogisticRegression(C=C, max_iter=2000, class_weight="balanced")
    model.fit(vectors, [int(flag) for flag in outside])
    return ScopeModel(
        weights=tuple(float(w) for w in model.coef_[0]), bias=float(model.intercept_[0])
    )
