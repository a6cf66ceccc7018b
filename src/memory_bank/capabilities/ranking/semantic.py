"""The embedding signal of capability search (the ``semantic`` extra).

Lexical search cannot connect "square root of 625" to "get a short answer from
Wolfram Alpha": no word is shared. A small sentence-embedding model
(``textsearch.embeddings``) can. It reads an operation's title and description
(:func:`capability_text`) and, each on its own, the requests the spec's author gave as
examples; the closest of them is the operation's similarity. The request is embedded whole.

Where operations have examples, the nearest phrase is a noisy judge: one stray example of the
wrong operation close to the request outvotes fifty of the right one. So the examples' vectors
also train a classifier (a logistic regression, as an intent engine trains one over sentence
embeddings), and its posterior's share of the best similarity becomes those operations' score;
an operation without examples keeps its closest text's. With the classifier the embedding
signal is worth more beside the lexical one (``INTENT_SEMANTIC_WEIGHT``). The two signals are
fused by ``textsearch.fusion.fuse``; the classifier and its weight were chosen by leaving one of
our request sets out (``docs/decisions/0041-an-intent-classifier-over-embeddings.md``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memory_bank.capabilities.ranking.example_intents import MOST_OPERATIONS
from memory_bank.textsearch.embeddings import Embedder

__all__ = ["INTENT_C", "INTENT_SEMANTIC_WEIGHT", "SemanticIndex", "TextVectors", "capability_text", "capability_texts"]

#: Inverse L2 strength of the classifier over the examples' vectors.
INTENT_C = 1.0
#: Share of the fused score from the embedding when that classifier scores it (the
#: description's similarity alone keeps ``textsearch.fusion.SEMANTIC_WEIGHT``).
INTENT_SEMANTIC_WEIGHT = 0.4


def capability_text(capability: Mapping[str, Any]) -> str:
    """What the model reads: the operation's title and description, as a person would write them."""
    title = str(capability.get("title") or "").strip()
    description = str(capability.get("description") or "").strip()
    return title if description in ("", title) else f"{title}. {description}"


def capability_texts(capability: Mapping[str, Any]) -> list[str]:
    """Every text the model reads for one capability: :func:`capability_text`, then its examples."""
    examples = [e for e in capability.get("examples") or () if isinstance(e, str) and e.strip()]
    return [capability_text(capability), *examples]


class TextVectors:
    """The vectors of capability texts, each text embedded once however many indexes read it.

    The registry builds one index per set of operations a caller may use; the sets
    overlap (most tokens may call the memory operations), so their texts are embedded
    once here and the indexes share the rows. Only catalog texts come here, never
    queries, so it holds a bounded set.
    """

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._rows: dict[str, Any] = {}

    def __call__(self, texts: Sequence[str]) -> Any:
        """One row per text, in order: the texts not seen before embedded in one batch."""
        import numpy as np

        missing = list(dict.fromkeys(text for text in texts if text not in self._rows))
        if missing:
            embedded = np.asarray(self._embedder(missing), dtype=np.float32).reshape(len(missing), -1)
            self._rows.update(zip(missing, embedded))
        return np.stack([self._rows[text] for text in texts])


class SemanticIndex:
    """Unit vectors of every text of every capability; a query is one matrix-vector product
    (and, where capabilities have examples, one posterior of the classifier over them)."""

    def __init__(
        self,
        embedder: Embedder,
        texts: Sequence[Sequence[str]],
        *,
        vectors: TextVectors | None = None,
        intents: bool = True,
    ) -> None:
        """``texts``: per capability, its non-empty list of texts (see :func:`capability_texts`);
        ``vectors``: where their rows come from, shared with other indexes (a fresh one otherwise);
        ``intents``: whether the examples train the classifier (needs two to ``MOST_OPERATIONS``
        capabilities with examples)."""
        import numpy as np

        flat = [text for group in texts for text in group]
        self._embed = embedder
        self._matrix = (vectors or TextVectors(embedder))(flat)
        self._starts = np.cumsum([0, *(len(group) for group in texts[:-1])])
        owners = np.repeat(np.arange(len(texts)), [len(group) for group in texts])
        self._trained = np.asarray([len(group) > 1 for group in texts])  # text and examples
        self._intents: Any = None
        if intents and 2 <= int(self._trained.sum()) <= MOST_OPERATIONS:
            from sklearn.linear_model import LogisticRegression
            from threadpoolctl import threadpool_limits

            rows = self._trained[owners]
            with threadpool_limits(limits=1):
                self._intents = LogisticRegression(C=INTENT_C, max_iter=1000).fit(self._matrix[rows], owners[rows])

    @property
    def classifies(self) -> bool:
        """Whether the examples trained a classifier (its score wants ``INTENT_SEMANTIC_WEIGHT``)."""
        return self._intents is not None

    def scores(self, query: str) -> list[float]:
        """Per capability, by position: the best cosine similarity of ``query`` with one of its
        texts, clipped into [0, 1]; for a capability the classifier was trained on, the
        classifier's posterior as a share of the best similarity of any."""
        import numpy as np

        vector = np.asarray(self._embed([query]), dtype=np.float32).reshape(-1)
        closest = np.maximum.reduceat(np.clip(self._matrix @ vector, 0.0, 1.0), self._starts)
        if self._intents is not None:
            posterior = np.zeros(len(closest))
            posterior[self._intents.classes_] = self._intents.predict_proba(vector.reshape(1, -1))[0]
            closest = np.where(self._trained, posterior / posterior.max() * closest.max(), closest)
        return [float(s) for s in closest]
