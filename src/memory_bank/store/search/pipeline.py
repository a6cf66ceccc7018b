"""A search from query to ranked rows: lexical, then semantic fusion, then feedback.

1. lexical hits and scores for the query's terms: from the owner's postings kept in the
   process (``postings``), or, for an owner too large to hold, by ``lexical``'s plan;
2. with an embedder, the ``semantic.NEIGHBOURS`` rows closest to the query (found
   through the backend's vector index, ``semantic.nearest``) join them, and every candidate's score becomes the fusion of both signals
   (``textsearch.fusion``); a row the other signal did not find counts 0 there;
3. the best ``max(3 * limit, 30)`` lend each other relevance when they share an
   origin (``boosts.context``), then get their feedback applied (``boosts.feedback``),
   enough for a demoted memory to leave the page and a promoted one to climb it;
4. ``min_score``, order (score, then newer, then higher pk), ``limit``.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy import ColumnElement
from sqlmodel import Session, col

from memory_bank.store.search import semantic
from memory_bank.store.search.backend import SearchBackend
from memory_bank.store.search.boosts import context, feedback
from memory_bank.store.search.lexical import lexical, sample_cache
from memory_bank.store.search.postings import OwnerPostings
from memory_bank.store.search.text import query_terms
from memory_bank.store.tables import MemoryRow
from memory_bank.textsearch.embeddings import Embedder
from memory_bank.textsearch.fusion import LEXICAL_FLOOR, SEMANTIC_WEIGHT, fuse

#: Candidates, per result asked for, that the origin boost and feedback may reorder.
FEEDBACK_DEPTH = 3


class MemorySearch:
    def __init__(
        self,
        backend: SearchBackend,
        embedder: Embedder | None = None,
        vectors: semantic.VectorIndex | None = None,
        postings: OwnerPostings | None = None,
    ) -> None:
        self._backend = backend
        self._embedder = embedder
        self._vectors = vectors
        self._postings = postings
        self._samples = sample_cache()

    def search(
        self,
        session: Session,
        reader: semantic.Reader,
        where: Sequence[ColumnElement[bool]],
        q: str,
        limit: int,
        min_score: float,
        *,
        filtered: bool = True,
    ) -> list[tuple[MemoryRow, float]]:
        """The best ``limit`` rows for ``q`` with scores in [0, 1]; none when nothing matches.
        ``where`` selects the searched rows, all of them visible to ``reader``; unless
        ``filtered``, exactly the live rows the reader may see."""
        terms = query_terms(q)
        scores = self._lexical(session, reader, where, terms, 10 * limit, filtered) if terms else {}
        if self._embedder is not None:
            scores = self._fused(session, reader, where, q, scores)
        if not scores:
            return []
        best = sorted(scores, key=lambda pk: (scores[pk], pk), reverse=True)[: max(FEEDBACK_DEPTH * limit, 30)]
        # Order by (score, newer, pk) with only timestamps and contexts read; whole rows for the page alone.
        facts = sa.select(col(MemoryRow.pk), col(MemoryRow.created_at), col(MemoryRow.contexts)).where(
            col(MemoryRow.pk).in_(best)
        )
        created, origins = {}, {}
        for pk, created_at, contexts in session.execute(facts):
            created[pk], origins[pk] = created_at, context.origins(contexts)
        best = [pk for pk in best if pk in created]  # postings a moment newer than this transaction's reads
        scores = context.boosted({pk: scores[pk] for pk in best}, origins)
        votes = feedback.net_votes(session, best)
        final = {pk: feedback.boosted(scores[pk], votes[pk]) if pk in votes else scores[pk] for pk in best}
        # Score 0 is no evidence at all (no shared term, no similarity): never a hit.
        kept = (pk for pk in best if final[pk] > 0 and final[pk] >= min_score)
        page = sorted(kept, key=lambda pk: (final[pk], created[pk], pk), reverse=True)[:limit]
        rows = {row.pk: row for row in session.scalars(sa.select(MemoryRow).where(col(MemoryRow.pk).in_(page)))}
        return [(rows[pk], final[pk]) for pk in page]

    def _lexical(
        self,
        session: Session,
        reader: semantic.Reader,
        where: Sequence[ColumnElement[bool]],
        terms: Sequence[str],
        bound: int,
        filtered: bool,
    ) -> dict[int, float]:
        """The lexical scores, from the owner's postings when this replica can hold them."""
        if self._postings is not None:
            found = self._postings.scores(session, reader, terms, bound, where if filtered else None)
            if found is not None:
                return found
        return lexical(session, self._backend, where, terms, bound, self._samples)

    def _fused(
        self,
        session: Session,
        reader: semantic.Reader,
        where: Sequence[ColumnElement[bool]],
        q: str,
        lexical_scores: dict[int, float],
    ) -> dict[int, float]:
        assert self._embedder is not None
        near = semantic.nearest(session, self._vectors, reader, where, self._embedder([q])[0], lexical_scores)
        closest = sorted(near, key=near.__getitem__, reverse=True)[: semantic.NEIGHBOURS]
        pks = list(dict.fromkeys([*lexical_scores, *closest]))
        fused = fuse(
            [lexical_scores.get(pk, 0.0) for pk in pks],
            [near.get(pk, 0.0) for pk in pks],
            SEMANTIC_WEIGHT,
            LEXICAL_FLOOR,
        )
        return dict(zip(pks, fused, strict=True))
