"""The MariaDB/MySQL vector index: bounded per-owner matrices in the process (``semantic`` extra).

MariaDB 10.x has no vector type, so each replica keeps, per *partition* (a user's own rows,
or an organisation's shared rows), the pks, a current-version flag and the vectors as
float16 (768 bytes a row instead of 1,536), loaded on the partition's first search and
scanned exactly by ``usearch`` (SIMD, float16 without converting). The candidates it
proposes are re-scored from the stored float32 vectors under the search's filters
(``semantic.nearest``), so rounding only matters at the edge of the candidate list, which
asks for twice the rows needed.

Memory: partitions live in one LRU whose bytes (vectors, pks, flags) never exceed the
budget (``MEMORY_BANK_VECTOR_CACHE_MB``); the least recently searched partition is
evicted to make room, and a partition larger than the whole budget is never held (its
searches scan, as without an index).

Other replicas: before each use, a partition's row count is read from the index that
already serves its listing (``ix_memory_owner_created``, ``ix_memory_org_scope_created``:
no row is read). A changed count means rows were written, here or on another replica:
the partition's pks are read from that index, and only the new rows are fetched, their
predecessors (a new version supersedes one) marked old. A delete adds no row: the
tombstoned chain stays a candidate until the partition is next loaded, and the filters
that re-score candidates drop it; it costs a place in the candidate list, never a result.
Likewise a vector given later to a row already read (``memory-bank db embed``) joins the
partition when it is next loaded whole (after an eviction or a restart).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy import ColumnElement
from sqlalchemy.orm import aliased
from sqlmodel import Session, col

from memory_bank.store.search.budget import PartitionCache
from memory_bank.store.search.semantic import Reader
from memory_bank.store.tables import MemoryRow
from memory_bank.textsearch.embeddings import DIMENSIONS

__all__ = ["CachedVectors", "Partition"]

#: (org_id, user_id) for a user's own rows, (org_id, None) for the organisation's shared rows.
Partition = tuple[str, str | None]


def _rows_of(partition: Partition) -> list[ColumnElement[bool]]:
    org_id, user_id = partition
    if user_id is None:
        return [col(MemoryRow.org_id) == org_id, col(MemoryRow.scope) == "org"]
    return [col(MemoryRow.org_id) == org_id, col(MemoryRow.user_id) == user_id]


@dataclass(frozen=True)
class _Block:
    """One partition's vectors; never changed in place (a refresh builds a new block), so a
    search may keep scanning one while another thread replaces it."""

    rows: int  # the partition's row count when read: the version check
    seen: Any  # sorted int64 pks of every row read, with or without a vector
    pks: Any  # int64 pks of the rows with a vector
    live: Any  # bool, current version
    vectors: Any  # float16 matrix, one row per pk

    @property
    def nbytes(self) -> int:
        return int(self.seen.nbytes + self.pks.nbytes + self.live.nbytes + self.vectors.nbytes)


class CachedVectors(PartitionCache[Partition, _Block]):
    """``semantic.VectorIndex`` from an LRU of per-partition float16 matrices of at most ``budget`` bytes."""

    def candidates(self, session: Session, reader: Reader, query: Any, k: int) -> list[int] | None:
        import numpy as np
        from usearch.compiled import MetricKind
        from usearch.index import search

        blocks = [self._block(session, (reader.org_id, None)), self._block(session, (reader.org_id, reader.user_id))]
        if any(block is None for block in blocks):
            return None
        vector = np.asarray(query, dtype=np.float16)
        best: dict[int, float] = {}
        for block in blocks:
            assert block is not None
            # Old versions are skipped after the scan, not masked out before it (a 15 MB copy at 20,000 rows).
            wanted = min(len(block.pks), k + (int(np.count_nonzero(~block.live)) if reader.current_only else 0))
            if wanted == 0:
                continue
            found = search(block.vectors, vector, wanted, MetricKind.IP, exact=True, threads=1)
            for position, distance in zip(found.keys.tolist(), found.distances.tolist(), strict=True):
                if block.live[position] or not reader.current_only:
                    pk = int(block.pks[position])
                    best[pk] = min(float(distance), best.get(pk, float("inf")))
        return sorted(best, key=best.__getitem__)[:k]

    def _block(self, session: Session, partition: Partition) -> _Block | None:
        where = _rows_of(partition)
        rows = int(session.execute(sa.select(sa.func.count()).select_from(MemoryRow).where(*where)).scalar_one())
        block = self._blocks.get(partition)
        if block is not None and block.rows == rows:
            return block
        fresh = _load(session, where, rows, block)
        return fresh if self._blocks.put(partition, fresh) else None


def _load(session: Session, where: Sequence[ColumnElement[bool]], rows: int, old: _Block | None) -> _Block:
    """The partition's block: all of it, or ``old`` plus the rows written since it was read."""
    import numpy as np

    pks = np.array(session.scalars(sa.select(col(MemoryRow.pk)).where(*where)).all(), dtype=np.int64)
    pks.sort()
    new = pks if old is None else np.setdiff1d(pks, old.seen, assume_unique=True)
    before = aliased(MemoryRow)
    statement = (
        sa.select(
            col(MemoryRow.pk),
            col(MemoryRow.embedding),
            sa.and_(col(MemoryRow.superseded_at).is_(None), col(MemoryRow.deleted_at).is_(None)),
            col(before.pk),
        )
        .outerjoin(before, col(before.id) == col(MemoryRow.supersedes_id))
        .where(sa.func.length(col(MemoryRow.embedding)) == 4 * DIMENSIONS)  # another model's vectors are never near
    )
    got: list[tuple[int, bytes, bool]] = []
    superseded: list[int] = []
    for start in range(0, len(new), 1000):
        chunk = new[start : start + 1000].tolist()
        for pk, blob, live, predecessor in session.execute(statement.where(col(MemoryRow.pk).in_(chunk))):
            got.append((pk, blob, bool(live)))
            if predecessor is not None:
                superseded.append(predecessor)
    added = np.array([pk for pk, _, _ in got], dtype=np.int64)
    vectors = np.frombuffer(b"".join(blob for _, blob, _ in got), dtype="<f4").reshape(len(got), DIMENSIONS).astype(np.float16)
    live = np.array([flag for _, _, flag in got], dtype=bool)
    if old is not None:
        added, live = np.concatenate([old.pks, added]), np.concatenate([old.live, live])
        vectors = np.concatenate([old.vectors, vectors]) if len(vectors) else old.vectors
    live &= ~np.isin(added, np.array(superseded, dtype=np.int64))
    return _Block(rows=rows, seen=pks, pks=added, live=live, vectors=vectors)
