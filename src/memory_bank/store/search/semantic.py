"""The optional semantic half of memory search (``semantic`` extra, setting ``semantic_search``).

Lexical search cannot connect "What did Caroline research?" to "I've been looking
into adoption agencies": no term is shared. A sentence-embedding model
(``textsearch.embeddings``, the same as capability search's) can.

Each memory's unit vector (384 float32, 1.5 KB) is computed once, when the row is
inserted (``indexing``), and stored with it in ``memory.embedding``. The model reads
who and when before what (:func:`memory_text`): questions name people and dates, and a
turn rarely names its speaker.

A search embeds the query and asks the backend's vector index (``VectorIndex``) for the
rows nearest to it among those its reader may see: ``sqlite_vectors`` (the ``sqlite-vec``
extension, exact) on SQLite, ``vector_cache`` (bounded per-owner matrices in the process)
on MariaDB/MySQL, which have no vector type. The index only proposes candidates; their
similarities are computed from ``memory.embedding`` under the search's own filters
(:func:`nearest`), so scores are the full scan's and a stale index entry can never leak
a row. Without an index (extension missing, owner over the memory budget) the search
falls back to the full scan (:func:`similarities`). Why: ``docs/decisions/0025-vector-indexes.md``.

Fusion with the lexical score is capability search's, parameters included
(``textsearch.fusion``), so they were set before looking at memories. Measurements
(fusion grid, other models): ``docs/decisions/0003-fusion-parameters.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy import ColumnElement
from sqlmodel import Session, col

from memory_bank.settings import Settings
from memory_bank.store.tables import MemoryRow
from memory_bank.textsearch.embeddings import Embedder, load_embedder

__all__ = [
    "INSTALL_SEMANTIC", "MAX_CANDIDATES", "NEIGHBOURS", "Reader", "SemanticExtraMissing", "VectorIndex", "embedder_for",
    "embedders", "memory_text", "nearest", "required_embedder", "similarities", "to_blob",
]  # fmt: skip

#: Rows the embedding side adds to the lexical candidates, best first.
NEIGHBOURS = 100
#: The most candidates asked of an index (sqlite-vec's own bound on k); a search whose filters
#: admit fewer than ``NEIGHBOURS`` of them is narrow enough for the exact scan of what they admit.
MAX_CANDIDATES = 4096


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


def embedders(settings: Settings) -> tuple[Embedder | None, Embedder | None]:
    """The model for memory search and for capability search, each when its setting is on:
    loaded once when both are (it is ~90 MB and seconds to load), an error naming the
    settings that asked for it when the extra is missing."""
    wanted = {"MEMORY_BANK_SEMANTIC_SEARCH": settings.semantic_search, "MEMORY_BANK_SEMANTIC_CAPABILITIES": settings.semantic_capabilities}
    named = [name for name, on in wanted.items() if on]
    model = required_embedder(" and ".join(named) + (" are on" if len(named) > 1 else " is on")) if named else None
    return (model if settings.semantic_search else None), (model if settings.semantic_capabilities else None)


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


@dataclass(frozen=True)
class Reader:
    """Whose search it is: the org's shared rows and the user's own (``filters.visible_to``),
    current versions only unless the search includes superseded ones."""

    org_id: str
    user_id: str
    current_only: bool = True


class VectorIndex(Protocol):
    """Nearest-neighbour candidates of a backend."""

    def candidates(self, session: Session, reader: Reader, query: Any, k: int) -> list[int] | None:
        """Up to ``k`` pks of rows ``reader`` may see, nearest to ``query`` first, fewer only when
        there are no more; they may include rows the search's filters exclude. None when the
        index cannot answer now (the caller scans instead)."""
        ...


def nearest(
    session: Session,
    index: VectorIndex | None,
    reader: Reader,
    where: Sequence[ColumnElement[bool]],
    query: Any,
    also: Iterable[int] = (),
) -> dict[int, float]:
    """Like :func:`similarities`, but only for the ``NEIGHBOURS`` (or more) nearest searched rows
    and the rows ``also`` names (lexical candidates), read through ``index``.

    Candidates are asked for twice the rows needed, then four times as many while the
    filters reject too many of them, up to ``MAX_CANDIDATES``: one to four index questions
    and at most ``MAX_CANDIDATES + len(also)`` vectors read per search.
    """
    extra = list(also)
    k = 2 * NEIGHBOURS
    while index is not None and (found := index.candidates(session, reader, query, k)) is not None:
        near = similarities(session, [*where, col(MemoryRow.pk).in_([*found, *extra])], query)
        if len(found) < k or sum(pk in near for pk in found) >= NEIGHBOURS:
            return near
        if k >= MAX_CANDIDATES:
            break
        k = min(4 * k, MAX_CANDIDATES)
    return similarities(session, where, query)
