"""The optional semantic half of memory search (``semantic`` extra, setting ``semantic_search``).

Lexical search cannot connect "What did Caroline research?" to "I've been looking
into adoption agencies": no term is shared. A sentence-embedding model can. The model
is the capability search's (``capabilities.semantic.load_embedder``): all-MiniLM-L6-v2
shipped inside a PyPI package and loaded offline, on one CPU thread.

Each memory's unit vector (384 float32, 1.5 KB) is computed once, when the row is
inserted (``store.indexing``), from its tags and content, and stored with it in
``memory.embedding``. A search embeds the query and compares it with the vectors of
every row it ranges over (one matrix-vector product): exact, no index to keep in
step, and cheap for an owner's thousands of rows; for millions of rows per owner it
would want a vector index, which neither SQLite nor MariaDB 10.11 has.

Fusion with the lexical score reuses ``capabilities.semantic.fuse`` (each signal put
on "share of this query's best", the lexical best floored) with the weight and floor
below, chosen by leave-one-conversation-out on the LoCoMo dev set (see
``evals/memory_search.py --cv``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import ColumnElement
from sqlmodel import Session, col

from memory_bank.capabilities.semantic import Embedder, fuse, load_embedder
from memory_bank.settings import Settings
from memory_bank.store.tables import MemoryRow

__all__ = ["LEXICAL_FLOOR", "NEIGHBOURS", "SEMANTIC_WEIGHT", "Embedder", "embedder_for", "fuse", "memory_text", "similarities", "to_blob"]

#: Share of the fused score that comes from the embedding.
SEMANTIC_WEIGHT = 0.5
#: A lexical best below this score is scaled as such, not stretched to 1.0.
LEXICAL_FLOOR = 0.5
#: Rows the embedding side adds to the lexical candidates, best first.
NEIGHBOURS = 100


def embedder_for(settings: Settings) -> Embedder | None:
    """The model when ``settings.semantic_search`` is on; an error if the extra is missing,
    since silently searching without it would hide a broken deployment."""
    if not settings.semantic_search:
        return None
    embedder = load_embedder()
    if embedder is None:
        raise RuntimeError("MEMORY_BANK_SEMANTIC_SEARCH is on but the semantic extra is not installed: pip install 'memory-bank[semantic]'")
    return embedder


def memory_text(content: str, tags: Iterable[str]) -> str:
    """What the model reads for a memory: its tags (e.g. who said it), then its content."""
    labels = ", ".join(tags)
    return f"{labels}: {content}" if labels else content


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
