"""The embedding signal of capability search (the ``semantic`` extra).

Lexical search cannot connect "square root of 625" to "get a short answer from
Wolfram Alpha": no word is shared. A small sentence-embedding model
(``textsearch.embeddings``) can. It reads an operation's title and description
(:func:`capability_text`) and, each on its own, the requests the spec's author gave as
examples; the closest of them is the operation's similarity, as the nearest training
phrase decides an intent. The request is embedded whole. The two signals are fused by
``textsearch.fusion.fuse``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memory_bank.textsearch.embeddings import Embedder

__all__ = ["SemanticIndex", "TextVectors", "capability_text", "capability_texts"]


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
    """Unit vectors of every text of every capability; a query is one matrix-vector product."""

    def __init__(self, embedder: Embedder, texts: Sequence[Sequence[str]], *, vectors: TextVectors | None = None) -> None:
        """``texts``: per capability, its non-empty list of texts (see :func:`capability_texts`);
        ``vectors``: where their rows come from, shared with other indexes (a fresh one otherwise)."""
        import numpy as np

        flat = [text for group in texts for text in group]
        self._embed = embedder
        self._matrix = (vectors or TextVectors(embedder))(flat)
        self._starts = np.cumsum([0, *(len(group) for group in texts[:-1])])

    def scores(self, query: str) -> list[float]:
        """Per capability, by position: the best cosine similarity of ``query`` with one of its
        texts, clipped into [0, 1]."""
        import numpy as np

        vector = np.asarray(self._embed([query]), dtype=np.float32).reshape(-1)
        return [float(s) for s in np.maximum.reduceat(np.clip(self._matrix @ vector, 0.0, 1.0), self._starts)]
