"""SQLite's part of search: an FTS5 external-content index over ``memory.search_text``.

The index reads ``search_text`` (already folded and stemmed, ``store.search.text``, so the
plain ``unicode61`` tokenizer splits it back into exactly those terms) straight from
the ``memory`` table, keyed by its integer ``pk``; triggers keep it in step. Rows
are never rewritten except for timestamps, so in practice only the insert trigger
fires. An index from before ``search_text`` existed (over ``content`` and ``tags``,
with FTS5's own Porter stemmer) is replaced at start-up.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import ColumnElement, func
from sqlalchemy.engine import Connection
from sqlmodel import Session, col

from memory_bank.store.search.indexing import backfill
from memory_bank.store.tables import MemoryRow

_TRIGGERS = ("memory_fts_ai", "memory_fts_ad", "memory_fts_au")

_DDL = (
    """CREATE VIRTUAL TABLE memory_fts USING fts5(
        search_text, content='memory', content_rowid='pk', tokenize='unicode61')""",
    """CREATE TRIGGER memory_fts_ai AFTER INSERT ON memory BEGIN
        INSERT INTO memory_fts(rowid, search_text) VALUES (new.pk, new.search_text);
    END""",
    """CREATE TRIGGER memory_fts_ad AFTER DELETE ON memory BEGIN
        INSERT INTO memory_fts(memory_fts, rowid, search_text) VALUES ('delete', old.pk, old.search_text);
    END""",
    """CREATE TRIGGER memory_fts_au AFTER UPDATE OF search_text ON memory BEGIN
        INSERT INTO memory_fts(memory_fts, rowid, search_text) VALUES ('delete', old.pk, old.search_text);
        INSERT INTO memory_fts(rowid, search_text) VALUES (new.pk, new.search_text);
    END""",
)

_fts = sa.table("memory_fts", sa.column("rowid"), sa.column("memory_fts"))


def _phrase(term: str) -> str:
    """One FTS5 string token: quoted, so no term is read as query syntax."""
    return '"' + term.replace('"', '""') + '"'


def _current_index(connection: Connection) -> str | None:
    return connection.exec_driver_sql("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'memory_fts'").scalar()


#: The SQL name of :func:`tags_hold`, registered on every connection (``store.database``).
TAGS_HOLD = "memory_bank_tags_hold"


def tags_hold(tags: str | None, tag: str) -> int:
    """1 when the JSON array ``tags`` holds the string ``tag`` exactly, NULs included."""
    held = json.loads(tags) if tags else []
    return int(isinstance(held, list) and tag in held)


def register_functions(connection: sqlite3.Connection) -> None:
    """Make :func:`tags_hold` callable from SQL on ``connection``."""
    connection.create_function(TAGS_HOLD, 2, tags_hold, deterministic=True)


class SqliteSearch:
    def install(self, connection: Connection) -> None:
        backfill(connection)
        existing = _current_index(connection)
        if existing is not None and "search_text" in existing:
            return
        for trigger in _TRIGGERS:
            connection.exec_driver_sql(f"DROP TRIGGER IF EXISTS {trigger}")
        connection.exec_driver_sql("DROP TABLE IF EXISTS memory_fts")
        for statement in _DDL:
            connection.exec_driver_sql(statement)
        # Memories saved before the index existed get indexed now.
        connection.exec_driver_sql("INSERT INTO memory_fts(memory_fts) VALUES ('rebuild')")

    def has_tag(self, tag: str) -> ColumnElement[bool]:
        # SQLite's JSON functions end a string at a NUL ("a\u0000b" reads "a"): a row whose JSON
        # text may hold one is read by Python's parser instead (:func:`tags_hold`).
        tags = col(MemoryRow.tags)
        values = func.json_each(tags).table_valued("value")
        exact = getattr(func, TAGS_HOLD)(tags, tag) == 1
        return sa.case((func.instr(tags, "\\u0000") > 0, exact), else_=sa.exists().where(values.c.value == tag))

    def unindexed(self, session: Session, terms: Sequence[str]) -> list[str]:
        # unicode61 keeps every token, however short or long: each term of store.search.text is in the index.
        return []

    def index_match(
        self, session: Session, terms: Sequence[str], *, every: bool = False
    ) -> tuple[ColumnElement[bool], ColumnElement[Any]]:
        # Naming memory_fts in the condition joins it on rowid; bm25() ranks in its FTS5 context.
        query = (" AND " if every else " OR ").join(_phrase(t) for t in terms)
        matches = sa.and_(_fts.c.rowid == col(MemoryRow.pk), _fts.c.memory_fts.op("MATCH")(query))
        return matches, func.bm25(sa.literal_column("memory_fts"))
