"""Lexical candidates and their scores: one plan, the same on every backend.

A search reads the ``search_text`` of the rows it ranges over (its WHERE clause:
owner, version, filters), at most ``SCAN_ROWS + 1`` of them:

* when that is all of them (the common case: one user's or one org's memories),
  statistics and candidates come from those rows in Python: their count, mean length,
  and per query term how many contain it, tested as the whole term ``" term "``
  (``store.text`` pads every value with spaces). One indexed range read, exact,
  nothing missed. Both full-text indexes are one index over every tenant, so asking
  them costs as much as the word's matches in the whole table: measured at 100k rows
  on MariaDB, 300 ms for a common word, against 3 ms to scan an org's 1,000 rows
  (``bench/memory_backends.py``). Reading the rows once, rather than one SQL pass for
  statistics and another for candidates, halved the time per search at 1,000 rows
  (``bench/memory_scale.py``);
* beyond it, statistics come from one aggregate pass in SQL (``LIKE '% term %'``)
  and the dialect's full-text index finds at most ``bound`` candidates (at least
  ``CANDIDATES``), best first by the index's own relevance.

Every candidate is then scored from its ``search_text`` with BM25 over the searched
rows' statistics (``bm25``) and the score rule of ``store.search``: other tenants'
rows change neither the candidates of the scan nor any score.

Pseudo-relevance feedback (RM3-style expansion with the terms of the best 5 matches,
re-ranking inside a coordination band) was tried and dropped: leave-one-conversation-out
on LoCoMo it raised recall@10 from 0.666 to 0.691 at MRR 0.517 -> 0.512, but counting
the new terms over every searched row cost 3 ms of CPU per search, which took the 1M
MariaDB p50 from 14.5 to 17.3 ms, past the 15 ms budget (commit 9dc5db4 has it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import sqlalchemy as sa
from sqlalchemy import ColumnElement, func
from sqlmodel import Session, col

from memory_bank.store import bm25
from memory_bank.store.search import SearchBackend, score
from memory_bank.store.tables import MemoryRow
from memory_bank.store.text import whole_term

#: Searches over at most this many rows read them all instead of asking the full-text index.
SCAN_ROWS = 20_000
#: Candidates the index plan scores, at least; beyond it, the index's order picks which.
CANDIDATES = 500

_text = cast(ColumnElement[str], col(MemoryRow.search_text))


Row = tuple[int, str]  # pk, search_text


def _scan(rows: Sequence[Row], terms: Sequence[str]) -> tuple[bm25.Corpus, list[Row]]:
    """Statistics of all ``rows`` and the rows holding any term, by whole-term substring tests
    (cheaper than splitting every row: most rows of an owner hold none of the terms)."""
    padded = [f" {t} " for t in terms]
    found = [(pk, text) for pk, text in rows if any(p in text for p in padded)]
    frequency = {t: sum(p in text for _, text in found) for t, p in zip(terms, padded, strict=True)}
    return bm25.Corpus(len(rows), sum(len(text) for _, text in rows) / len(rows), frequency), found


def _corpus(
    session: Session, backend: SearchBackend, where: Sequence[ColumnElement[bool]], terms: Sequence[str]
) -> bm25.Corpus:
    """The searched rows' count, mean length and per-term document counts, in one SQL pass."""
    contains = (sa.case((_text.like(whole_term(t)), 1), else_=0) for t in terms)
    statement = sa.select(func.count(), func.avg(backend.length(_text)), *(func.sum(c) for c in contains)).where(*where)
    rows, mean_length, *counts = session.execute(statement).one()
    return bm25.Corpus(int(rows), float(mean_length or 0), {t: int(n or 0) for t, n in zip(terms, counts, strict=True)})


def _from_index(
    session: Session, backend: SearchBackend, where: Sequence[ColumnElement[bool]], terms: Sequence[str], bound: int
) -> list[Row]:
    match, best_first = backend.index_match(session, terms)
    statement = (
        sa.select(col(MemoryRow.pk), _text)
        .where(*where, match)
        .order_by(best_first, col(MemoryRow.created_at).desc())
        .limit(max(bound, CANDIDATES))
    )
    return [(pk, text or "") for pk, text in session.execute(statement)]


def lexical(
    session: Session, backend: SearchBackend, where: Sequence[ColumnElement[bool]], terms: Sequence[str], bound: int
) -> dict[int, float]:
    """pk -> score of every candidate matching a term (``terms`` non-empty, from ``text.query_terms``)."""
    statement = sa.select(col(MemoryRow.pk), _text).where(*where).limit(SCAN_ROWS + 1)
    rows = [(pk, text or "") for pk, text in session.execute(statement)]
    if not rows:
        return {}
    if len(rows) <= SCAN_ROWS:
        corpus, candidates = _scan(rows, terms)
    else:
        corpus, candidates = _corpus(session, backend, where, terms), _from_index(session, backend, where, terms, bound)
    wanted = frozenset(terms)
    hits = {}
    for pk, text in candidates:
        matched, relevance = corpus.relevance(text.split(), len(text), wanted)
        if matched:  # the index may over-match (its own word split); the terms decide
            hits[pk] = score(matched, relevance, len(terms))
    return hits
