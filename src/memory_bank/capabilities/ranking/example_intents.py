"""The examples as training phrases: which of the operations a request is, learnt from them.

:mod:`example_requests` scores an operation by how many of its examples use each of a request's
words. With twenty examples an operation, a request shares a word with one stray example of the
wrong operation as easily as with one of the right one's: "that memory was helpful" shares
"memory" and "was" with every operation. An intent engine does not count phrases that share a
word; it trains a classifier on all of them, so that what the examples of an operation share
decides.

This is that classifier: a multinomial logistic regression (scikit-learn's, L2-regularised with
``C = TEXT_C``) over TF-IDF of the character n-grams of each word (``NGRAMS``), trained on the
title, the description and each example of every operation that has examples, labelled with
their operation; the title on its own, since it is the plainest request there is ("Save a
memory"). Character n-grams keep "remeber", "categorised" or "notes" near the words the
examples use. Its posterior gives each of those operations its probability's share of the best
example score, and the operation keeps the geometric mean of that and its own example score: an
operation comes first when the classifier and the count of shared words agree, and a request the
examples say little about (two or three words) keeps most of its counted shape. The signal stays
on its own scale, and an operation without examples (a vendor spec's) keeps its score: a catalog
without examples ranks as before.

The regularisation and the n-gram range were chosen by leaving one of our two development
request sets out (``docs/decisions/0032-example-intents.md``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["MOST_OPERATIONS", "NGRAMS", "TEXT_C", "ExampleIntents", "TextIntents"]

#: Inverse L2 strength of the classifier; 30-300 is a plateau on both development sets.
TEXT_C = 100.0
#: The most operations with examples a classifier is trained for. Its training cost grows with
#: operations x n-grams x texts: 0.01 s of CPU for 10 operations with 22 examples each, 1 s for
#: 64, 3 s for 100 and 87 s for 1,447 with 6. Above this, the counted score ranks alone.
MOST_OPERATIONS = 64
#: Character n-grams within words, shortest and longest.
NGRAMS = (2, 4)


def trainable(operations: int) -> bool:
    """Whether a classifier is trained for this many operations with examples: there is nothing
    to tell apart with fewer than two, and it costs too much with more than ``MOST_OPERATIONS``."""
    return 2 <= operations <= MOST_OPERATIONS


class ExampleIntents:
    """A classifier over one feature row per text of the operations with examples (made by :meth:`fit`)."""

    def __init__(self, model: Any) -> None:
        self._model = model

    @classmethod
    def fit(cls, features: Any, owners: Sequence[int]) -> ExampleIntents | None:
        """Train on the rows of ``features``, each labelled with its capability's position
        (``owners``); None unless :func:`trainable` says so for that many operations."""
        import numpy as np
        from sklearn.linear_model import LogisticRegression
        from threadpoolctl import threadpool_limits

        labels = np.asarray(owners)
        if not trainable(len(np.unique(labels))):
            return None
        # Newton-CG converges in a few steps where L-BFGS takes dozens; one BLAS thread, since on
        # a busy two-core box worker threads spin more than they compute (50 ms against 0.7-2 s).
        with threadpool_limits(limits=1):
            return cls(LogisticRegression(C=TEXT_C, solver="newton-cg", max_iter=1000).fit(features, labels))

    def reshape(self, scores: Any, features: Any) -> Any:
        """``scores`` (a numpy array, per capability) with the operations' values re-shaped by the
        posterior for the request's feature row ``features``: see the module docstring."""
        import numpy as np

        posterior = self._model.predict_proba(features)[0]
        members = self._model.classes_
        shaped = posterior / posterior.max() * scores[members].max()
        reshaped = scores.copy()
        reshaped[members] = np.sqrt(scores[members] * shaped)
        return reshaped


class TextIntents:
    """:class:`ExampleIntents` over TF-IDF of character n-grams of a catalog's texts."""

    def __init__(self, vectorizer: Any, intents: ExampleIntents) -> None:
        self._vectorizer = vectorizer
        self._intents = intents

    @classmethod
    def fit(cls, capabilities: Sequence[Mapping[str, Any]], examples: Sequence[Sequence[str]]) -> TextIntents | None:
        """Trained on the title, description and ``examples`` (those the count reads, per capability)
        of each capability that has some; None when :meth:`ExampleIntents.fit` trains none."""
        from sklearn.feature_extraction.text import TfidfVectorizer

        texts: list[str] = []
        owners: list[int] = []
        for position, (capability, own_examples) in enumerate(zip(capabilities, examples)):
            if own_examples:
                own = [str(capability.get(part) or "").strip() for part in ("title", "description")]
                phrases = [*(text for text in own if text), *own_examples]
                texts += phrases
                owners += [position] * len(phrases)
        if not trainable(len(set(owners))):
            return None
        vectorizer = TfidfVectorizer(analyzer="char_wb", ngram_range=NGRAMS, sublinear_tf=True)
        intents = ExampleIntents.fit(vectorizer.fit_transform(texts), owners)
        return cls(vectorizer, intents) if intents is not None else None

    def reshape(self, scores: Sequence[float], request: str) -> list[float]:
        """``scores`` re-shaped by the posterior of ``request``."""
        import numpy as np

        return [float(s) for s in self._intents.reshape(np.asarray(scores, dtype=float), self._vectorizer.transform([request]))]
