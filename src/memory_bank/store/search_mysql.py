"""Full-text search on MySQL/MariaDB: candidates from SQL, owner-local BM25 ranks them.

A search first counts the rows it ranges over (its WHERE clause: owner, version,
filters), then picks one of two plans:

* up to ``SCAN_ROWS`` rows, it reads the rows containing any term (``LIKE``, which
  the case- and accent-insensitive collation of ``content`` makes match as the
  index would) and computes everything in Python. InnoDB's FULLTEXT index is one
  index over every tenant, so a ``MATCH`` costs as much as the word's matches in
  the whole table: measured at 100k rows, 300 ms for a common word, against 3 ms
  to scan an org's 1,000 rows (bench/memory_backends.py).
* beyond it, ``MATCH ... AGAINST`` finds at most ``CANDIDATES`` rows, best first by
  InnoDB's relevance, and per-term document counts come from SQL.

Either way the candidates are scored by ``bm25`` over the searched rows, not by
InnoDB's relevance, whose IDF counts other tenants' rows; and the score is
``search.score``, as on SQLite. FULLTEXT pitfalls and what the index plan does:

* membership is tested ``IN BOOLEAN MODE`` (no operators: any term): natural
  language mode drops rows whose relevance is 0, which on MySQL is every row when a
  word occurs in all of them; the candidates are ordered by the same expression;
* words shorter than ``innodb_ft_min_token_size`` (3 by default) or longer than
  ``innodb_ft_max_token_size`` are not in the index: they match by a word-boundary
  ``REGEXP`` over the caller's rows instead;
* stopwords: the index is built without InnoDB's list (``bootstrap_mysql``);
  ``search.STOPWORDS`` is applied to queries on both backends;
* a row enters the index at COMMIT: a save is acknowledged only after its commit,
  so what a client was told is saved is searchable.

InnoDB has no stemmer: ``prefers`` does not find ``prefer`` here, unlike SQLite's
porter tokenizer, and tag words are not searched as text (use ``tags=``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy import ColumnElement, func
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Connection
from sqlmodel import Session, col

from memory_bank.store import bm25
from memory_bank.store.bootstrap_mysql import advisory_lock, ensure_fulltext
from memory_bank.store.search import score
from memory_bank.store.tables import MemoryRow

#: Searches over at most this many rows scan them instead of asking the FULLTEXT index.
SCAN_ROWS = 20_000
#: Candidates the index plan re-scores, at least; beyond it, InnoDB's order picks which.
CANDIDATES = 500

# col() is typed as the mapped attribute; MATCH wants it as the column expression it is.
_content = cast(ColumnElement[str], col(MemoryRow.content))

Candidate = tuple[int, str, datetime]  # pk, content, created_at


def _any_match(terms: Sequence[str]) -> ColumnElement[Any]:
    return mysql.match(_content, against=" ".join(terms)).in_boolean_mode()


def _as_word(term: str) -> ColumnElement[bool]:
    # Terms are letters and digits only (search.query_terms): nothing to escape.
    return _content.regexp_match(rf"\b{term}\b")


class MysqlSearch:
    def __init__(self) -> None:
        self._token_sizes: tuple[int, int] | None = None

    def install(self, connection: Connection) -> None:
        with advisory_lock(connection):
            ensure_fulltext(connection)

    def has_tag(self, tag: str) -> ColumnElement[bool]:
        return func.json_contains(col(MemoryRow.tags), func.json_quote(tag)) == 1

    def ranked(
        self,
        session: Session,
        where: Sequence[ColumnElement[bool]],
        terms: Sequence[str],
        limit: int,
        min_score: float,
    ) -> list[tuple[MemoryRow, float]]:
        rows, mean_length = session.execute(sa.select(func.count(), func.avg(func.char_length(_content))).where(*where)).one()
        if not rows:
            return []
        folded = [bm25.fold(t) for t in terms]
        if rows <= SCAN_ROWS:
            candidates = self._scan(session, where, terms)
            documents = [bm25.words(content) for _, content, _ in candidates]
            frequency = bm25.frequency(documents, folded)
        else:
            candidates = self._from_index(session, where, terms, max(CANDIDATES, 10 * limit))
            documents = [bm25.words(content) for _, content, _ in candidates]
            frequency = self._frequency(session, where, terms)
        corpus = bm25.Corpus(documents=int(rows), mean_length=float(mean_length), frequency=frequency)
        scored = []
        for (pk, content, created_at), document in zip(candidates, documents, strict=True):
            matched, relevance = corpus.relevance(document, len(content), folded)
            value = score(matched, relevance, len(terms))
            if matched and value >= min_score:  # LIKE and InnoDB's tokenizer over-match; words() decides
                scored.append((value, created_at, pk))
        best = sorted(scored, reverse=True)[:limit]
        statement = sa.select(MemoryRow).where(col(MemoryRow.pk).in_([pk for _, _, pk in best]))
        by_pk = {row.pk: row for row in session.scalars(statement)}
        return [(by_pk[pk], value) for value, _, pk in best]

    def _scan(self, session: Session, where: Sequence[ColumnElement[bool]], terms: Sequence[str]) -> list[Candidate]:
        """Every searched row that contains a term, possibly inside a longer word."""
        contains = sa.or_(*(_content.contains(t, autoescape=True) for t in terms))
        statement = sa.select(col(MemoryRow.pk), _content, col(MemoryRow.created_at)).where(*where, contains)
        return [(pk, content, created_at) for pk, content, created_at in session.execute(statement)]

    def _from_index(
        self, session: Session, where: Sequence[ColumnElement[bool]], terms: Sequence[str], bound: int
    ) -> list[Candidate]:
        """At most ``bound`` searched rows matching a term, by InnoDB's relevance, then newest."""
        indexed = [t for t in terms if self._indexed(session, t)]
        tests = [_as_word(t) for t in terms if t not in indexed]
        order: list[ColumnElement[Any]] = [col(MemoryRow.created_at).desc()]
        if indexed:
            tests.append(_any_match(indexed) > 0)
            order.insert(0, _any_match(indexed).desc())
        statement = (
            sa.select(col(MemoryRow.pk), _content, col(MemoryRow.created_at))
            .where(*where, sa.or_(*tests))
            .order_by(*order)
            .limit(bound)
        )
        return [(pk, content, created_at) for pk, content, created_at in session.execute(statement)]

    def _frequency(self, session: Session, where: Sequence[ColumnElement[bool]], terms: Sequence[str]) -> dict[str, int]:
        """Per-term counts of the searched rows, by the index where it can see the word."""
        tests = [_any_match([t]) > 0 if self._indexed(session, t) else _as_word(t) for t in terms]
        counts = session.execute(sa.select(*(func.sum(sa.case((test, 1), else_=0)) for test in tests)).where(*where)).one()
        return {bm25.fold(term): int(n or 0) for term, n in zip(terms, counts, strict=True)}

    def _indexed(self, session: Session, term: str) -> bool:
        if self._token_sizes is None:
            row = session.execute(sa.text("SELECT @@innodb_ft_min_token_size, @@innodb_ft_max_token_size")).one()
            self._token_sizes = (int(row[0]), int(row[1]))
        shortest, longest = self._token_sizes
        return shortest <= len(term) <= longest
