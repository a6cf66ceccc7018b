"""MySQL/MariaDB's part of search: InnoDB FULLTEXT over ``memory.search_text``.

The index is built by ``bootstrap_mysql`` (without InnoDB's stopword list) over the
derived ``search_text`` column, whose terms are already folded and stemmed
(``store.search.text``): InnoDB has no stemmer, so this is how ``prefers`` finds
``preferred`` here as on SQLite. The index only serves owners too large to scan
(``store.search.lexical``); its pitfalls and what is done about them:

* membership is tested ``IN BOOLEAN MODE`` (no operators: any term; ``+`` before each
  term: all of them): natural language mode drops rows whose relevance is 0, which on
  MySQL is every row when a word occurs in all of them; candidates are ordered by the
  same expression;
* terms shorter than ``innodb_ft_min_token_size`` (3 by default) or longer than
  ``innodb_ft_max_token_size`` are not in the index (``unindexed``): the plan never asks
  it for them, and tests them itself on the rows it reads (``store.search.lexical._unseen``),
  not by ``LIKE`` over the owner's rows (``bench/short_terms_mariadb.py``);
* a row enters the index at COMMIT: a save is acknowledged only after its commit,
  so what a client was told is saved is searchable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy import ColumnElement, func
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Connection
from sqlmodel import Session, col

from memory_bank.store.bootstrap_mysql import advisory_lock, ensure_fulltext
from memory_bank.store.search.indexing import backfill
from memory_bank.store.tables import MemoryRow

# col() is typed as the mapped attribute; MATCH wants it as the column expression it is.
_text = cast(ColumnElement[str], col(MemoryRow.search_text))


class MysqlSearch:
    def __init__(self) -> None:
        self._token_sizes: tuple[int, int] | None = None

    def install(self, connection: Connection) -> None:
        with advisory_lock(connection):
            backfill(connection)
            ensure_fulltext(connection)

    def has_tag(self, tag: str) -> ColumnElement[bool]:
        return func.json_contains(col(MemoryRow.tags), func.json_quote(tag)) == 1

    def unindexed(self, session: Session, terms: Sequence[str]) -> list[str]:
        shortest, longest = self._sizes(session)
        return [t for t in terms if not shortest <= len(t) <= longest]

    def index_match(
        self, session: Session, terms: Sequence[str], *, every: bool = False
    ) -> tuple[ColumnElement[bool], ColumnElement[Any]]:
        # "+term" makes a term required in boolean mode; a bare term is optional (any of them).
        relevance = mysql.match(_text, against=" ".join(f"+{t}" if every else t for t in terms)).in_boolean_mode()
        return relevance > 0, relevance.desc()

    def _sizes(self, session: Session) -> tuple[int, int]:
        """The server's shortest and longest indexed token, read once."""
        if self._token_sizes is None:
            row = session.execute(sa.text("SELECT @@innodb_ft_min_token_size, @@innodb_ft_max_token_size")).one()
            self._token_sizes = (int(row[0]), int(row[1]))
        return self._token_sizes
