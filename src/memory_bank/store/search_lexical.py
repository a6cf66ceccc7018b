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
rows' statistics (``bm25``) and the score rule of ``store.search``, and scored again
with the query expanded by pseudo-relevance feedback (``expansion``): other tenants'
rows change neither the candidates of the scan nor any score.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import cast

import sqlalchemy as sa
from sqlalchemy import ColumnElement, func
from sqlmodel import Session, col

from memory_bank.store import bm25, expansion
from memory_bank.store.search import SearchBackend, score
from memory_bank.store.tables import MemoryRow
from memory_bank.store.text import whole_term

#: Searches over at most this many rows read them all instead of asking the full-text index.
SCAN_ROWS = 20_000
#: Candidates the index plan scores, at least; beyond it, the index's order picks which.
CANDIDATES = 500

_text = cast(ColumnElement[str], col(MemoryRow.search_text))


#: A searched row as BM25 reads it, split once for every pass: (pk, terms, characters).
Doc = tuple[int, list[str], int]


def _docs(rows: Iterable[tuple[int, str | None]]) -> list[Doc]:
    return [(pk, (text or "").split(), len(text or "")) for pk, text in rows]


def _scan(docs: Sequence[Doc], terms: Sequence[str]) -> tuple[bm25.Corpus, list[Doc]]:
    """Statistics of all ``docs`` and the docs holding any term."""
    wanted = set(terms)
    found = [doc for doc in docs if not wanted.isdisjoint(doc[1])]
    corpus = bm25.Corpus(len(docs), sum(length for _, _, length in docs) / len(docs), _document_counts(found, terms))
    return corpus, found


def _document_counts(docs: Sequence[Doc], terms: Sequence[str]) -> dict[str, int]:
    """In how many ``docs`` each term occurs (one pass, whatever the number of terms)."""
    counts = dict.fromkeys(terms, 0)
    wanted = set(terms)
    for _, words, _ in docs:
        for term in wanted.intersection(words):
            counts[term] += 1
    return counts


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
) -> list[Doc]:
    match, best_first = backend.index_match(session, terms)
    statement = (
        sa.select(col(MemoryRow.pk), _text)
        .where(*where, match)
        .order_by(best_first, col(MemoryRow.created_at).desc())
        .limit(max(bound, CANDIDATES))
    )
    return _docs(session.execute(statement))


def lexical(
    session: Session, backend: SearchBackend, where: Sequence[ColumnElement[bool]], terms: Sequence[str], bound: int
) -> dict[int, float]:
    """pk -> score of every candidate matching a term (``terms`` non-empty, from ``text.query_terms``)."""
    statement = sa.select(col(MemoryRow.pk), _text).where(*where).limit(SCAN_ROWS + 1)
    docs = _docs(session.execute(statement))
    if not docs:
        return {}
    frequency: expansion.Frequency
    if len(docs) <= SCAN_ROWS:
        corpus, candidates = _scan(docs, terms)
        frequency = lambda pool: _document_counts(docs, pool)  # noqa: E731
    else:
        corpus, candidates = _corpus(session, backend, where, terms), _from_index(session, backend, where, terms, bound)
        frequency = lambda pool: _corpus(session, backend, where, pool).frequency  # noqa: E731
    wanted = frozenset(terms)
    first = {pk: (words, length, *corpus.relevance(words, length, wanted)) for pk, words, length in candidates}
    # the index may over-match (its own word split); the terms decide
    matches = {pk: hit for pk, hit in first.items() if hit[2]}
    scores = {pk: score(matched, relevance, len(terms)) for pk, (_, _, matched, relevance) in matches.items()}
    best = sorted(scores, key=lambda pk: (scores[pk], pk), reverse=True)
    extra, corpus = expansion.expand([matches[pk][0] for pk in best], terms, corpus, frequency)
    if not extra:
        return scores
    added = frozenset(extra)
    return {
        pk: score(matched, relevance + expansion.WEIGHT * corpus.relevance(words, length, added)[1], len(terms))
        for pk, (words, length, matched, relevance) in matches.items()
    }
