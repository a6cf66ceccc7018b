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
examples use; an id or a keypath is read as its shape (:func:`value_shapes`), since which one an
example names says nothing of the operation. Its posterior gives each of those operations its probability's share of the best
example score, and the operation keeps the geometric mean of that and its own example score: an
operation comes first when the classifier and the count of shared words agree, and a request the
examples say little about (two or three words) keeps most of its counted shape. The signal stays
on its own scale, and an operation without examples (a vendor spec's) keeps its score: a catalog
without examples ranks as before.

Where a word stands says what it does: "remember: aisle seats only" orders a save, "what do you
remember about seats?" asks a search, and n-grams within words cannot tell the two apart. So the
classifier also reads the word a text opens with (:func:`opening_word`, as a one-hot feature of
weight ``OPENING_WEIGHT`` beside the n-grams), the place where an imperative puts its verb; a
text that opens with a function word ("the", "what", "please") has none, since that word says
little about the order.

The regularisation and the n-gram range were chosen by leaving one of our development request
sets out (``docs/decisions/0032-example-intents.md``); the value shapes in
``docs/decisions/0035-spelling-and-value-shapes.md``; the opening word and its weight in
``docs/decisions/0037-the-opening-word.md``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memory_bank.textsearch.tokenize import API_STOPWORDS, masked_opaque, stem

__all__ = ["MOST_OPERATIONS", "NGRAMS", "OPENING_WEIGHT", "PATH_LIKE", "TEXT_C", "TextIntents", "opening_word", "value_shapes"]

#: Inverse L2 strength of the classifier; 30-300 is a plateau on both development sets.
TEXT_C = 100.0
#: The most operations with examples a classifier is trained for. Its training cost grows with
#: operations x n-grams x texts: 0.01 s of CPU for 10 operations with 22 examples each, 1 s for
#: 64, 3 s for 100 and 87 s for 1,447 with 6. Above this, the counted score ranks alone.
MOST_OPERATIONS = 64
#: Character n-grams within words, shortest and longest.
NGRAMS = (2, 4)
#: Weight of the opening word's feature beside a text's n-grams, whose TF-IDF vector has norm 1:
#: as much as all of them together. Every fold of leave-one-set-out chose it from 0.3-3.
OPENING_WEIGHT = 1.0
#: A word: a run of letters.
_WORD = re.compile(r"[^\W\d_]+")
#: A path-like value: words joined by dots or slashes ("user.preferences.theme", "work/calendar").
PATH_LIKE = re.compile(r"\b[^\W\d_][\w-]*(?:[./][\w-]+)+\b")
#: What an opaque value (an id) and a path-like value become for the classifier: characters of
#: the private use area, which no request word has, so their n-grams are the shape's alone.
_ID_SHAPE, _PATH_SHAPE = " \ue000\ue000 ", " \ue001\ue001 "


def value_shapes(text: str) -> str:
    """``text`` lower-cased, each id and each path-like value replaced by its shape.

    An operation's examples name some ids and keypaths and a request names others: what they
    share is that there is one, and that is what the classifier should learn, not the n-grams
    of the ones an example happens to use (the entity masking of intent classifiers)."""
    return masked_opaque(PATH_LIKE.sub(_PATH_SHAPE, text.lower()), _ID_SHAPE)  # a path may hold an id


def opening_word(text: str) -> list[str]:
    """The stem of the first word of ``text`` (lower-case), unless it is a function word
    (``API_STOPWORDS``): what the classifier reads of where a word stands. A list, as a
    vectorizer's analyzer returns: empty when there is none."""
    found = _WORD.search(text)
    return [stem(found[0])] if found and found[0] not in API_STOPWORDS else []


class TextIntents:
    """The classifier over TF-IDF of character n-grams of a catalog's texts (made by :meth:`fit`)."""

    def __init__(self, vectorizer: Any, model: Any) -> None:
        self._vectorizer = vectorizer
        self._model = model

    @classmethod
    def fit(
        cls,
        capabilities: Sequence[Mapping[str, Any]],
        examples: Sequence[Sequence[str]],
        *,
        shapes: bool = True,
        opening: bool = True,
    ) -> TextIntents | None:
        """Trained on the title, description and ``examples`` (those the count reads, per capability)
        of each capability that has some, labelled with its position; None with fewer than two
        such capabilities (nothing to tell apart) or more than ``MOST_OPERATIONS``. ``shapes``:
        whether ids and paths are read as their shapes (:func:`value_shapes`); ``opening``:
        whether the opening word is read (:func:`opening_word`)."""
        texts: list[str] = []
        owners: list[int] = []
        for position, (capability, own_examples) in enumerate(zip(capabilities, examples)):
            if own_examples:
                own = [str(capability.get(part) or "").strip() for part in ("title", "description")]
                phrases = [*(text for text in own if text), *own_examples]
                texts += phrases
                owners += [position] * len(phrases)
        if not 2 <= len(set(owners)) <= MOST_OPERATIONS:
            return None
        # Imported here, once a catalog has something to train: scikit-learn takes 0.7-1.4 s to import.
        from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import FeatureUnion
        from threadpoolctl import threadpool_limits

        preprocessor: Callable[[str], str] = value_shapes if shapes else str.lower
        parts: list[tuple[str, Any]] = [
            ("ngrams", TfidfVectorizer(analyzer="char_wb", ngram_range=NGRAMS, sublinear_tf=True, preprocessor=preprocessor))
        ]
        weights = {"ngrams": 1.0}
        if opening and any(opening_word(preprocessor(text)) for text in texts):  # a vocabulary to learn
            parts.append(("opening", CountVectorizer(analyzer=lambda text: opening_word(preprocessor(text)), binary=True)))
            weights["opening"] = OPENING_WEIGHT
        vectorizer = FeatureUnion(parts, transformer_weights=weights)
        features = vectorizer.fit_transform(texts)
        # Newton-CG converges in a few steps where L-BFGS takes dozens; one BLAS thread, since on
        # a busy two-core box worker threads spin more than they compute (50 ms against 0.7-2 s).
        with threadpool_limits(limits=1):
            model = LogisticRegression(C=TEXT_C, solver="newton-cg", max_iter=1000).fit(features, owners)
        return cls(vectorizer, model)

    def reshape(self, scores: Sequence[float], request: str) -> list[float]:
        """``scores`` (per capability) with the trained operations' values re-shaped by the
        posterior of ``request``: see the module docstring."""
        import numpy as np

        counted = np.asarray(scores, dtype=float)
        posterior = self._model.predict_proba(self._vectorizer.transform([request]))[0]
        members = self._model.classes_
        shaped = posterior / posterior.max() * counted[members].max()
        reshaped = counted.copy()
        reshaped[members] = np.sqrt(counted[members] * shaped)
        return [float(s) for s in reshaped]
