"""The embedding signal of capability search (the ``semantic`` extra).

Lexical search cannot connect "square root of 625" to "get a short answer from
Wolfram Alpha": no word is shared. A small sentence-embedding model
(``textsearch.embeddings``) can. It reads an operation's title and description
(:func:`capability_text`); the request is embedded whole. The two signals are fused
by ``textsearch.fusion.fuse``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memory_bank.textsearch.embeddings import Embedder

__all__ = ["SemanticIndex", "capability_text"]


def capability_text(capability: Mapping[str, Any]) -> str:
    """What the model reads: the operation's title and description, as a person would write them."""
    title = str(capability.get("title") or "").strip()
    description = str(capability.get("description") or "").strip()
    return title if description in ("", title) else f"{title}. {description}"


class SemanticIndex:
    """Unit vectors of every capability; a query is one matrix-vector product."""

    def __init__(self, embedder: Embedder, texts: Sequence[str]) -> None:
        import numpy as np

        self._embed = embedder
        self._matrix = np.asarray(embedder(texts), dtype=np.float32).reshape(len(texts), -1)

    def scores(self, query: str) -> list[float]:
        """Cosine similarity of ``query`` with every capability, clipped into [0, 1], by position."""
        import numpy as np

        vector = np.asarray(self._embed([query]), dtype=np.float32).reshape(-1)
        return [float(s) for s in np.clip(self._matrix @ vector, 0.0, 1.0)]
