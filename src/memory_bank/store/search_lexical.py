"""Lexical candidates and their scores: one plan, the same on every backend.

A search first reads statistics of the rows it ranges over (its WHERE clause:
owner, version, filters) in one pass: how many, their mean length and, per query
term, how many contain it (``LIKE '% term %'`` on ``search_text``, an exact
whole-term test, see ``store.text``). Then candidates:

* up to ``SCAN_ROWS`` rows, every searched row that contains a term, by the same
  ``LIKE``. Both full-text indexes are one index over every tenant, so asking them
  costs as much as the word's matches in the whole table: measured at 100k rows on
  MariaDB, 300 ms for a common word, against 3 ms to scan an org's 1,000 rows
  (``bench/memory_backends.py``); the scan is exact, so nothing is missed;
* beyond it, the dialect's full-text index finds at most ``bound`` rows (at least
  ``CANDIDATES``), best first by the index's own relevance.

Every candidate is then scored from its ``search_text`` with BM25 over the searched
rows' statistics (``bm25``) and the score rule of ``store.search``: other tenants'
rows change neither the candidates of the scan nor any score.
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

#: Searches over at most this many rows scan them instead of asking the full-text index.
SCAN_ROWS = 20_000
#: Candidates the index plan scores, at least; beyond it, the index's order picks which.
CANDIDATES = 500

_text = cast(ColumnElement[str], col(MemoryRow.search_text))


def _corpus(
    session: Session, backend: SearchBackend, where: Sequence[ColumnElement[bool]], terms: Sequence[str]
) -> bm25.Corpus:
    """The searched rows' count, mean length and per-term document counts, in one pass."""
    contains = (sa.case((_text.like(whole_term(t)), 1), else_=0) for t in terms)
    statement = sa.select(func.count(), func.avg(backend.length(_text)), *(func.sum(c) for c in contains)).where(*where)
    rows, mean_length, *counts = session.execute(statement).one()
    return bm25.Corpus(int(rows), float(mean_length or 0), {t: int(n or 0) for t, n in zip(terms, counts, strict=True)})


def lexical(
    session: Session, backend: SearchBackend, where: Sequence[ColumnElement[bool]], terms: Sequence[str], bound: int
) -> dict[int, float]:
    """pk -> score of every candidate matching a term (``terms`` non-empty, from ``text.query_terms``)."""
    corpus = _corpus(session, backend, where, terms)
    if not corpus.documents:
        return {}
    candidates = sa.select(col(MemoryRow.pk), _text)
    if corpus.documents <= SCAN_ROWS:
        statement = candidates.where(*where, sa.or_(*(_text.like(whole_term(t)) for t in terms)))
    else:
        match, best_first = backend.index_match(session, terms)
        statement = candidates.where(*where, match).order_by(best_first, col(MemoryRow.created_at).desc()).limit(max(bound, CANDIDATES))
    hits = {}
    for pk, text in session.execute(statement):
        matched, relevance = corpus.relevance(bm25.document(text or ""), len(text or ""), terms)
        if matched:  # the index may over-match (its own word split); the terms decide
            hits[pk] = score(matched, relevance, len(terms))
    return hits
