"""Full-text search on SQLite: an FTS5 external-content index over ``memory``.

The index reads ``content`` and ``tags`` (the JSON text tokenizes into the tag
words) straight from the ``memory`` table, keyed by its integer ``pk``; triggers keep
it in step. Rows are never rewritten except for timestamps, so in practice only the
insert trigger fires.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import ColumnElement, func
from sqlalchemy.engine import Connection
from sqlmodel import Session, col

from memory_bank.store.search import score
from memory_bank.store.tables import MemoryRow

_DDL = (
    """CREATE VIRTUAL TABLE memory_fts USING fts5(
        content, tags, content='memory', content_rowid='pk', tokenize='porter unicode61')""",
    """CREATE TRIGGER IF NOT EXISTS memory_fts_ai AFTER INSERT ON memory BEGIN
        INSERT INTO memory_fts(rowid, content, tags) VALUES (new.pk, new.content, new.tags);
    END""",
    """CREATE TRIGGER IF NOT EXISTS memory_fts_ad AFTER DELETE ON memory BEGIN
        INSERT INTO memory_fts(memory_fts, rowid, content, tags)
        VALUES ('delete', old.pk, old.content, old.tags);
    END""",
    """CREATE TRIGGER IF NOT EXISTS memory_fts_au AFTER UPDATE OF content, tags ON memory BEGIN
        INSERT INTO memory_fts(memory_fts, rowid, content, tags)
        VALUES ('delete', old.pk, old.content, old.tags);
        INSERT INTO memory_fts(rowid, content, tags) VALUES (new.pk, new.content, new.tags);
    END""",
)

_fts = sa.table("memory_fts", sa.column("rowid"), sa.column("memory_fts"))


def _phrase(term: str) -> str:
    """One FTS5 string token: quoted, so no user word is read as query syntax."""
    return '"' + term.replace('"', '""') + '"'


def _matches(query: str) -> ColumnElement[bool]:
    return _fts.c.memory_fts.op("MATCH")(query)


class SqliteSearch:
    def install(self, connection: Connection) -> None:
        exists = connection.exec_driver_sql(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memory_fts'"
        ).first()
        if exists:
            return
        for statement in _DDL:
            connection.exec_driver_sql(statement)
        # A database that had memories before the index existed gets them indexed now.
        connection.exec_driver_sql("INSERT INTO memory_fts(memory_fts) VALUES ('rebuild')")

    def has_tag(self, tag: str) -> ColumnElement[bool]:
        values = func.json_each(col(MemoryRow.tags)).table_valued("value")
        return sa.exists().where(values.c.value == tag)

    def ranked(
        self,
        session: Session,
        where: Sequence[ColumnElement[bool]],
        terms: Sequence[str],
        limit: int,
        min_score: float,
    ) -> list[tuple[MemoryRow, float]]:
        # Each term's rowid set is an uncorrelated subquery, evaluated once per search.
        matched: ColumnElement[Any] = sum(
            (sa.case((col(MemoryRow.pk).in_(sa.select(_fts.c.rowid).where(_matches(_phrase(t)))), 1), else_=0) for t in terms),
            start=sa.literal(0),
        )
        relevance: ColumnElement[Any] = -func.bm25(sa.literal_column("memory_fts"))
        hits = (
            sa.select(col(MemoryRow.pk).label("pk"), score(matched, relevance, len(terms)).label("score"))
            .select_from(_fts.join(MemoryRow, col(MemoryRow.pk) == _fts.c.rowid))
            .where(_matches(" OR ".join(_phrase(t) for t in terms)), *where)
            .subquery()
        )
        statement = (
            sa.select(MemoryRow, hits.c.score)
            .join(hits, col(MemoryRow.pk) == hits.c.pk)
            .where(hits.c.score >= min_score)
            .order_by(hits.c.score.desc(), col(MemoryRow.created_at).desc(), col(MemoryRow.pk).desc())
            .limit(limit)
        )
        return [(row, float(s)) for row, s in session.execute(statement).all()]
