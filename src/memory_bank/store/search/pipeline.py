"""A search from query to ranked rows: lexical, then semantic fusion, then feedback.

1. lexical hits and scores (``search_lexical``) for the query's terms;
2. with an embedder, the ``embeddings.NEIGHBOURS`` rows closest to the query join
   them, and every candidate's score becomes the fusion of both signals
   (``embeddings``); a row the other signal did not find counts 0 there;
3. the best ``max(3 * limit, 30)`` lend each other relevance when they share an
   origin (``context_boost``), then get their feedback applied (``feedback_boost``),
   enough for a demoted memory to leave the page and a promoted one to climb it;
4. ``min_score``, order (score, then newer, then higher pk), ``limit``.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy import ColumnElement
from sqlmodel import Session, col

from memory_bank.store import context_boost, embeddings, feedback_boost
from memory_bank.store.sample_cache import SampleCache
from memory_bank.store.search import SearchBackend
from memory_bank.store.search_lexical import lexical
from memory_bank.store.tables import MemoryRow
from memory_bank.store.text import query_terms

#: Candidates, per result asked for, that the origin boost and feedback may reorder.
FEEDBACK_DEPTH = 3


class MemorySearch:
    def __init__(self, backend: SearchBackend, embedder: embeddings.Embedder | None = None) -> None:
        self._backend = backend
        self._embedder = embedder
        self._samples = SampleCache()

    def search(
        self, session: Session, where: Sequence[ColumnElement[bool]], q: str, limit: int, min_score: float
    ) -> list[tuple[MemoryRow, float]]:
        """The best ``limit`` rows for ``q`` with scores in [0, 1]; none when nothing matches."""
        terms = query_terms(q)
        scores = lexical(session, self._backend, where, terms, 10 * limit, self._samples) if terms else {}
        if self._embedder is not None:
            scores = self._fused(session, where, q, scores)
        if not scores:
            return []
        best = sorted(scores, key=lambda pk: (scores[pk], pk), reverse=True)[: max(FEEDBACK_DEPTH * limit, 30)]
        # Order by (score, newer, pk) with only timestamps and contexts read; whole rows for the page alone.
        facts = sa.select(col(MemoryRow.pk), col(MemoryRow.created_at), col(MemoryRow.contexts)).where(
            col(MemoryRow.pk).in_(best)
        )
        created, origins = {}, {}
        for pk, created_at, contexts in session.execute(facts):
            created[pk], origins[pk] = created_at, context_boost.origins(contexts)
        scores = context_boost.boosted({pk: scores[pk] for pk in best}, origins)
        votes = feedback_boost.net_votes(session, best)
        final = {pk: feedback_boost.boosted(scores[pk], votes[pk]) if pk in votes else scores[pk] for pk in best}
        # Score 0 is no evidence at all (no shared term, no similarity): never a hit.
        kept = (pk for pk in best if final[pk] > 0 and final[pk] >= min_score)
        page = sorted(kept, key=lambda pk: (final[pk], created[pk], pk), reverse=True)[:limit]
        rows = {row.pk: row for row in session.scalars(sa.select(MemoryRow).where(col(MemoryRow.pk).in_(page)))}
        return [(rows[pk], final[pk]) for pk in page]

    def _fused(
        self, session: Session, where: Sequence[ColumnElement[bool]], q: str, lexical_scores: dict[int, float]
    ) -> dict[int, float]:
        assert self._embedder is not None
        near = embeddings.similarities(session, where, self._embedder([q])[0])
        closest = sorted(near, key=near.__getitem__, reverse=True)[: embeddings.NEIGHBOURS]
        pks = list(dict.fromkeys([*lexical_scores, *closest]))
        fused = embeddings.fuse(
            [lexical_scores.get(pk, 0.0) for pk in pks],
            [near.get(pk, 0.0) for pk in pks],
            embeddings.SEMANTIC_WEIGHT,
            embeddings.LEXICAL_FLOOR,
        )
        return dict(zip(pks, fused, strict=True))
