"""Memory search's lexical statistics and candidates from per-owner postings in the process.

Both full-text indexes are one index over every tenant, so they cannot say how many of one
owner's rows hold a word, and reading an owner's rows to count costs as much as the owner
is large (``lexical``). Instead each replica keeps, per *partition* (an org's shared rows;
a user's rows that are not shared), an inverted index of the rows' ``search_text``:
for each term the rows holding it and how often, and per row its pk, length and whether
it is its chain's live head. A search then reads no memory rows to rank: document count,
mean length and per-term document counts of exactly the searched rows are sums over the
partitions' arrays, the rows matching most query terms come from the postings, and BM25
(``textsearch.bm25``, the same formula as ``lexical``'s) is computed with numpy over them.

In step with every writer (``changes``): before each search the org's revision is read
(one row by primary key); when it moved, the changed rows named by the log since this
replica's revision are read by pk and applied: a new row joins a small segment of its own
(segments are merged when there are more than ``MAX_SEGMENTS``), a stamped row stops
being live. Texts never change after insert, so nothing else can go stale, and applying
a change twice is harmless. A replica too far behind the log, or one that sees the
revision go back, reloads the partition.

What one search may cost the database, whatever the query (``text.query_terms`` cuts it to
``MAX_TERMS`` distinct terms first), besides the reads by pk of at most ``max(3 * limit, 30)``
rows that rank the page (``pipeline``): the revision (one row by primary key); when the org
changed since this replica's last search, the log rows in between (at most
``changes.KEPT``) and the rows they name, by pk; when the replica holds no partition yet,
or is further behind than the log, one read of the partition's ``(pk, search_text)``
rows. No full-text index question, no ``LIKE``, and nothing per query term: the cost of
the terms is numpy's, over postings in memory.

Searches with filters (tags, category, project, keypath prefix, every version) read the
pks their WHERE clause admits (ints, the filtered rows only) and count over those rows.

Memory: partitions live in one LRU whose arrays never exceed ``budget`` bytes (about 12
bytes a row plus 6 a posting: ~200 bytes a memory of conversational text); a partition
larger than the whole budget is never held and its searches take ``lexical``'s plan.
Terms are held by their 64-bit string hash (per process, never stored): two terms of one
partition sharing one is a chance of about 1e-10 at 50,000 distinct terms.

Why, and the figures: ``docs/decisions/0030-owner-postings-in-the-process.md``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy import ColumnElement
from sqlmodel import Session, col

from memory_bank.store.search import changes
from memory_bank.store.search.budget import PartitionCache
from memory_bank.store.search.backend import score
from memory_bank.store.search.semantic import Reader
from memory_bank.store.tables import MemoryRow
from memory_bank.textsearch.bm25 import B, K1, idf

__all__ = ["MAX_SEGMENTS", "OwnerPostings", "Partition"]

#: (org_id, user_id) for a user's rows that are not shared, (org_id, None) for the org's shared rows.
Partition = tuple[str, str | None]

#: Segments a partition may have before they are merged (each search visits each one).
MAX_SEGMENTS = 8
#: The fewest bytes a row can cost (pk, length, flag, one posting): bounds a partition's first read.
_ROW_BYTES_AT_LEAST = 24
#: What a block costs beside its arrays (its objects, its place in the LRU): so that empty
#: partitions count against the budget too.
_BLOCK_BYTES = 1024
#: Seconds a partition found larger than the budget is left to ``lexical`` before it is tried again.
TOO_LARGE_SECONDS = 300.0

_live = sa.and_(col(MemoryRow.superseded_at).is_(None), col(MemoryRow.deleted_at).is_(None))

#: pk, search_text, live.
Row = tuple[int, str, bool]


def _rows_of(partition: Partition) -> list[ColumnElement[bool]]:
    org_id, user_id = partition
    if user_id is None:
        return [col(MemoryRow.org_id) == org_id, col(MemoryRow.scope) == "org"]
    return [col(MemoryRow.org_id) == org_id, col(MemoryRow.user_id) == user_id, col(MemoryRow.scope) != "org"]


def _partition_of(org_id: str, user_id: str, scope: str) -> Partition:
    return (org_id, None) if scope == "org" else (org_id, user_id)


@dataclass(frozen=True)
class _Segment:
    """Some rows of a partition and their postings; never changed in place (a search may be
    reading it while another thread builds its successor)."""

    pks: Any  # int64, ascending
    lengths: Any  # int64, len(search_text): BM25's length, as ``lexical`` counts it
    live: Any  # bool: the chain's live head (neither superseded nor deleted)
    terms: Any  # int64 term hashes, ascending
    offsets: Any  # int64, len(terms) + 1: term i's postings are docs[offsets[i]:offsets[i + 1]]
    docs: Any  # int32 row positions
    tfs: Any  # uint16 occurrences in the row

    @property
    def nbytes(self) -> int:
        return sum(int(a.nbytes) for a in (self.pks, self.lengths, self.live, self.terms, self.offsets, self.docs, self.tfs))

    def postings(self, term: int) -> tuple[Any, Any]:
        at = int(np.searchsorted(self.terms, term))
        if at == len(self.terms) or self.terms[at] != term:
            return self.docs[:0], self.tfs[:0]
        return self.docs[self.offsets[at] : self.offsets[at + 1]], self.tfs[self.offsets[at] : self.offsets[at + 1]]

    def expanded(self) -> tuple[Any, Any, Any]:
        """(term, doc, tf) per posting."""
        return np.repeat(self.terms, np.diff(self.offsets)), self.docs, self.tfs


def _grouped(pks: Any, lengths: Any, live: Any, terms: Any, docs: Any, tfs: Any) -> _Segment:
    """A segment from unique (term, doc) postings in any order."""
    order = np.argsort(terms, kind="stable")
    terms, docs, tfs = terms[order], docs[order], tfs[order]
    starts = np.flatnonzero(np.r_[True, terms[1:] != terms[:-1]]) if len(terms) else np.zeros(0, np.int64)
    return _Segment(
        pks=pks,
        lengths=lengths,
        live=live,
        terms=terms[starts],
        offsets=np.r_[starts, len(terms)].astype(np.int64),
        docs=docs.astype(np.int32),
        tfs=np.minimum(tfs, np.iinfo(np.uint16).max).astype(np.uint16),
    )


def _segment(rows: Sequence[Row]) -> _Segment:
    """Index ``rows`` (ascending pks): every word of a row's ``search_text`` is a term."""
    words = [text.split() for _, text, _ in rows]
    counts = np.fromiter(map(len, words), np.int64, len(rows))
    hashes = np.fromiter(map(hash, chain.from_iterable(words)), np.int64, int(counts.sum()))
    docs = np.repeat(np.arange(len(rows), dtype=np.int64), counts)
    # One posting per (term, row): a stable sort by term keeps each term's rows in order.
    order = np.argsort(hashes, kind="stable")
    hashes, docs = hashes[order], docs[order]
    first = np.r_[True, (hashes[1:] != hashes[:-1]) | (docs[1:] != docs[:-1])] if len(hashes) else np.zeros(0, bool)
    starts = np.flatnonzero(first)
    return _grouped(
        np.fromiter((pk for pk, _, _ in rows), np.int64, len(rows)),
        np.fromiter((len(text) for _, text, _ in rows), np.int64, len(rows)),
        np.fromiter((live for _, _, live in rows), bool, len(rows)),
        hashes[starts],
        docs[starts],
        np.diff(np.r_[starts, len(hashes)]),
    )


def _merged(segments: Sequence[_Segment]) -> _Segment:
    """One segment holding the rows and postings of ``segments``."""
    pks = np.concatenate([s.pks for s in segments])
    order = np.argsort(pks, kind="stable")
    position = np.empty_like(order)
    position[order] = np.arange(len(order))
    starts = np.cumsum([0, *(len(s.pks) for s in segments[:-1])])
    expanded = [s.expanded() for s in segments]
    return _grouped(
        pks[order],
        np.concatenate([s.lengths for s in segments])[order],
        np.concatenate([s.live for s in segments])[order],
        np.concatenate([t for t, _, _ in expanded]),
        position[np.concatenate([d.astype(np.int64) + start for (_, d, _), start in zip(expanded, starts, strict=True)])],
        np.concatenate([f for _, _, f in expanded]),
    )


def _compacted(segments: list[_Segment]) -> list[_Segment]:
    """At most ``MAX_SEGMENTS``: the small ones merged first, everything once they outgrow the largest."""
    if len(segments) <= MAX_SEGMENTS:
        return segments
    segments = sorted(segments, key=lambda s: len(s.pks), reverse=True)
    rest = _merged(segments[1:])
    return [_merged([segments[0], rest])] if len(rest.pks) * 2 > len(segments[0].pks) else [segments[0], rest]


@dataclass(frozen=True)
class _Block:
    """A partition's segments as of an org revision."""

    revision: int
    segments: tuple[_Segment, ...]

    @property
    def nbytes(self) -> int:
        return _BLOCK_BYTES + sum(s.nbytes for s in self.segments)

    def applied(self, revision: int, rows: Sequence[Row]) -> _Block | None:
        """This block with ``rows`` (changed rows of its partition) applied; None when a held
        row's text changed (only the start-up fill of a missing ``search_text`` does that)."""
        segments = list(self.segments)
        new: list[Row] = []
        stamped: dict[int, list[tuple[int, bool]]] = {}
        for row in rows:
            for index, segment in enumerate(segments):
                at = int(np.searchsorted(segment.pks, row[0]))
                if at < len(segment.pks) and segment.pks[at] == row[0]:
                    if segment.lengths[at] != len(row[1]):
                        return None
                    stamped.setdefault(index, []).append((at, row[2]))
                    break
            else:
                new.append(row)
        for index, changes_ in stamped.items():
            live = segments[index].live.copy()
            for at, flag in changes_:
                live[at] = flag
            segments[index] = _Segment(**{**segments[index].__dict__, "live": live})
        if new:
            segments.append(_segment(sorted(new)))
        return _Block(revision, tuple(_compacted(segments)))


class OwnerPostings(PartitionCache[Partition, _Block]):
    """Per-partition postings in an LRU of at most ``budget`` bytes, kept in step through ``changes``."""

    def __init__(self, budget: int) -> None:
        super().__init__(budget)
        self._too_large: dict[Partition, float] = {}
        self._lock = threading.Lock()

    def scores(
        self,
        session: Session,
        reader: Reader,
        terms: Sequence[str],
        bound: int,
        admitting: Sequence[ColumnElement[bool]] | None,
    ) -> dict[int, float] | None:
        """pk -> score (``backend.score``) of the best ``bound`` rows the reader may see that
        hold a query term: live heads, or, with ``admitting`` (a search's WHERE clause, with
        its filters), the rows it admits. None when a partition is too large to hold:
        ``lexical`` then."""
        blocks = self._blocks_now(session, reader)
        if blocks is None:
            return None
        segments = [segment for block in blocks for segment in block.segments]
        if admitting is None:
            masks = [s.live for s in segments]
        else:
            admitted = np.unique(np.fromiter(session.scalars(sa.select(col(MemoryRow.pk)).where(*admitting)), np.int64))
            masks = [np.isin(s.pks, admitted, assume_unique=True) for s in segments]
        return _ranked(segments, masks, terms, bound)

    def _blocks_now(self, session: Session, reader: Reader) -> list[_Block] | None:
        revision = changes.current(session, reader.org_id)
        partitions: list[Partition] = [(reader.org_id, None), (reader.org_id, reader.user_id)]
        with self._lock:
            now = time.monotonic()
            if any(self._too_large.get(p, 0.0) > now for p in partitions):
                return None
        held = {p: self._blocks.get(p) for p in partitions}
        behind = [b.revision for b in held.values() if b is not None and b.revision < revision]
        changed = changes.since(session, reader.org_id, min(behind), revision) if behind else None
        rows = _changed_rows(session, reader.org_id, changed) if changed else {}
        blocks = []
        for partition, block in held.items():
            # A block ahead of this search's revision was refreshed by a later search: newer
            # rows than this search would have read, as if it had started a moment later.
            if block is not None and block.revision >= revision:
                fresh: _Block | None = block
            else:
                fresh = block.applied(revision, rows.get(partition, [])) if block and changed is not None else None
                fresh = fresh or self._load(session, partition, revision)
            if fresh is None or not self._keep(partition, fresh):
                return None
            blocks.append(fresh)
        return blocks

    def _load(self, session: Session, partition: Partition, revision: int) -> _Block | None:
        most = self.budget // _ROW_BYTES_AT_LEAST
        statement = (
            sa.select(col(MemoryRow.pk), col(MemoryRow.search_text), _live).where(*_rows_of(partition)).limit(most + 1)
        )
        rows = sorted((pk, text or "", bool(live)) for pk, text, live in session.execute(statement))
        if len(rows) > most:
            self._refuse(partition)
            return None
        return _Block(revision, (_segment(rows),) if rows else ())

    def _keep(self, partition: Partition, block: _Block) -> bool:
        if self._blocks.put(partition, block):
            return True
        self._refuse(partition)
        return False

    def _refuse(self, partition: Partition) -> None:
        with self._lock:
            self._too_large[partition] = time.monotonic() + TOO_LARGE_SECONDS


def _changed_rows(session: Session, org_id: str, pks: set[int]) -> dict[Partition, list[Row]]:
    """The changed rows' current state, by partition."""
    statement = sa.select(
        col(MemoryRow.pk), col(MemoryRow.user_id), col(MemoryRow.scope), col(MemoryRow.search_text), _live
    ).where(col(MemoryRow.org_id) == org_id)
    found: dict[Partition, list[Row]] = {}
    ordered = sorted(pks)
    for start in range(0, len(ordered), 1000):
        chunk = ordered[start : start + 1000]
        for pk, user_id, scope, text, live in session.execute(statement.where(col(MemoryRow.pk).in_(chunk))):
            found.setdefault(_partition_of(org_id, user_id, scope), []).append((pk, text or "", bool(live)))
    return found


def _ranked(segments: Sequence[_Segment], masks: Sequence[Any], terms: Sequence[str], bound: int) -> dict[int, float]:
    """BM25 over the masked rows, as ``lexical`` scores a candidate, for the best ``bound``."""
    documents = sum(int(np.count_nonzero(m)) for m in masks)
    if documents == 0:
        return {}
    mean = sum(int(s.lengths[m].sum()) for s, m in zip(segments, masks, strict=True)) / documents
    hashes = [hash(t) for t in terms]
    found = []
    for segment, mask in zip(segments, masks, strict=True):
        postings = []
        for term in hashes:
            docs, tfs = segment.postings(term)
            keep = mask[docs]
            postings.append((docs[keep], tfs[keep]))
        found.append(postings)
    weights = [idf(documents, sum(len(f[i][0]) for f in found)) for i in range(len(terms))]
    pks, held, relevance = [], [], []
    for segment, postings in zip(segments, found, strict=True):
        if not any(len(docs) for docs, _ in postings):
            continue
        norm = K1 * (1 - B + B * segment.lengths / max(mean, 1.0))
        matched = np.zeros(len(segment.pks), np.int32)
        total = np.zeros(len(segment.pks))
        for weight, (docs, tfs) in zip(weights, postings, strict=True):
            tf = tfs.astype(np.float64)
            matched[docs] += 1
            total[docs] += weight * tf * (K1 + 1) / (tf + norm[docs])
        hit = np.flatnonzero(matched)
        pks.append(segment.pks[hit])
        held.append(matched[hit])
        relevance.append(total[hit])
    if not pks:
        return {}
    scores: Any = score(np.concatenate(held), np.concatenate(relevance), len(terms))  # type: ignore[type-var]
    best = np.argpartition(-scores, bound - 1)[:bound] if len(scores) > bound else np.arange(len(scores))
    return dict(zip(np.concatenate(pks)[best].tolist(), scores[best].tolist(), strict=True))
