"""Full-text search on MySQL/MariaDB: InnoDB FULLTEXT finds, owner-local BM25 ranks.

One search is two statements in one read transaction, both owner-scoped by the
caller's WHERE clause:

1. candidates: rows matching any term, at most ``candidate_limit``, best first by
   ``MATCH ... AGAINST (... IN NATURAL LANGUAGE MODE)``;
2. statistics of the searched rows (count, mean length, per-term document counts),
   with which ``bm25`` re-scores the candidates: InnoDB's relevance uses IDF over
   the whole table, i.e. other tenants' rows (see ``bm25``).

The score rule is ``search.score`` with ``m`` and ``s`` from ``bm25.relevance``, as
on SQLite. FULLTEXT pitfalls and what this module does about them:

* membership is tested ``IN BOOLEAN MODE`` (no operators: any term): natural
  language mode drops rows whose relevance is 0, which on MySQL is every row when a
  word occurs in all of them;
* words shorter than ``innodb_ft_min_token_size`` (3 by default) or longer than
  ``innodb_ft_max_token_size`` are not in the index: they match by a word-boundary
  ``REGEXP`` over the caller's rows instead;
* stopwords: the index is built without InnoDB's list (``bootstrap_mysql``);
  ``search.STOPWORDS`` is applied to queries on both backends;
* a row enters the index at COMMIT: a save is acknowledged only after its commit,
  so what a client was told is saved is searchable;
* InnoDB has no stemmer: ``prefers`` does not find ``prefer`` here, unlike SQLite's
  porter tokenizer, and tag words are not searched as text (use ``tags=``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy import ColumnElement, func
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Connection
from sqlmodel import Session, col

from memory_bank.store.bm25 import Corpus, fold, relevance
from memory_bank.store.bootstrap_mysql import advisory_lock, ensure_fulltext
from memory_bank.store.search import score
from memory_bank.store.tables import MemoryRow

#: Candidates re-scored per search, at least; beyond it, InnoDB's order picks which.
CANDIDATES = 500

# col() is typed as the mapped attribute; MATCH wants it as the column expression it is.
_content = cast(ColumnElement[str], col(MemoryRow.content))


def _in_index(term: str) -> ColumnElement[bool]:
    return mysql.match(_content, against=term).in_boolean_mode() > 0


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

    def _indexed(self, session: Session, term: str) -> bool:
        if self._token_sizes is None:
            row = session.execute(sa.text("SELECT @@innodb_ft_min_token_size, @@innodb_ft_max_token_size")).one()
            self._token_sizes = (int(row[0]), int(row[1]))
        shortest, longest = self._token_sizes
        return shortest <= len(term) <= longest

    def ranked(
        self,
        session: Session,
        where: Sequence[ColumnElement[bool]],
        terms: Sequence[str],
        limit: int,
        min_score: float,
    ) -> list[tuple[MemoryRow, float]]:
        indexed = [t for t in terms if self._indexed(session, t)]
        present = {t: _in_index(t) if t in indexed else _as_word(t) for t in terms}
        any_term = [_as_word(t) for t in terms if t not in indexed]
        if indexed:
            any_term.append(mysql.match(_content, against=" ".join(indexed)).in_boolean_mode() > 0)
        order: list[ColumnElement[Any]] = [col(MemoryRow.created_at).desc()]
        if indexed:
            order.insert(0, mysql.match(_content, against=" ".join(indexed)).in_natural_language_mode().desc())
        candidates = session.execute(
            sa.select(col(MemoryRow.pk), _content, col(MemoryRow.created_at))
            .where(*where, sa.or_(*any_term))
            .order_by(*order)
            .limit(max(CANDIDATES, 10 * limit))
        ).all()
        if not candidates:
            return []
        corpus = self._corpus(session, where, present)
        folded = [fold(t) for t in terms]
        scored = []
        for pk, content, created_at in candidates:
            matched, s = relevance(content, folded, corpus)
            # InnoDB's tokenizer found a term the Python one did not (e.g. around an apostrophe).
            value = score(max(matched, 1), s, len(terms))
            if value >= min_score:
                scored.append((value, created_at, pk))
        best = sorted(scored, reverse=True)[:limit]
        rows = {row.pk: row for row in session.scalars(sa.select(MemoryRow).where(col(MemoryRow.pk).in_([pk for _, _, pk in best])))}
        return [(rows[pk], value) for value, _, pk in best]

    def _corpus(self, session: Session, where: Sequence[ColumnElement[bool]], present: dict[str, ColumnElement[bool]]) -> Corpus:
        """Row count, mean length and per-term document counts of the rows ``where`` selects."""
        counts = [func.sum(sa.case((test, 1), else_=0)) for test in present.values()]
        row = session.execute(sa.select(func.count(), func.avg(func.char_length(_content)), *counts).where(*where)).one()
        frequency = {fold(term): int(n or 0) for term, n in zip(present, row[2:], strict=True)}
        return Corpus(documents=int(row[0]), mean_length=float(row[1] or 0.0), frequency=frequency)
