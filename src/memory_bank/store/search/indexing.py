"""What a memory row carries for search, derived when the row is written.

``search_text`` (``text``) and, when semantic search is on, ``embedding``
(``semantic``) are set by ORM hooks rather than by each writer: saves,
patches, keypath puts and imports all insert rows, and a hook cannot be forgotten
by the next path that does. Rows are never updated in place, so nothing has to be
derived again. ``search_text`` is set per row (``before_insert``); vectors for all
the rows a flush inserts are computed together (``before_flush``), up to
``EMBED_BATCH`` texts per model call: the model sorts what it is given by length
before it batches, so big calls pad less. The importer writes through Core, which no
ORM hook sees, and calls ``derive`` on its column values instead, before its
transaction opens.

The embedder rides on the engine as the execution option ``EMBEDDER_OPTION``
(``MemoryStore(engine, embedder)`` sets it), so only the stores that were given
one compute vectors, and tests, CLI and app need no process-wide switch.

``backfill`` fills ``search_text`` of rows written before the column existed; the
search backends run it at start-up (``install``), under the schema lock.
``backfill_embeddings`` fills the vectors of rows written while semantic search was
off; it is an operator's step (``memory-bank db embed``), since embedding a large
database takes minutes to hours and must not hold up a start.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import Select, Update, event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import Session
from sqlmodel import col

from memory_bank.store.search import changes, semantic
from memory_bank.store.search.text import search_text
from memory_bank.store.tables import MemoryRow
from memory_bank.textsearch.embeddings import Embedder

EMBEDDER_OPTION = "memory_bank_embedder"
#: Rows filled per UPDATE round trip by ``backfill``.
BACKFILL_BATCH = 1000
#: Texts per call of the embedding model: enough for it to sort by length and pad little,
#: few enough that a call's vectors stay small (1,024 x 384 float32 = 1.5 MB).
EMBED_BATCH = 1024


@event.listens_for(MemoryRow, "before_insert")
def _derive(_mapper: Any, _connection: Connection, row: MemoryRow) -> None:
    row.search_text = search_text(row.content, row.tags or (), row.contexts or ())


@event.listens_for(Session, "before_flush")
def _embed_new_rows(session: Session, _context: Any, _instances: Any) -> None:
    rows = [row for row in session.new if isinstance(row, MemoryRow) and row.embedding is None]
    embedder = session.connection().get_execution_options().get(EMBEDDER_OPTION) if rows else None
    if embedder is not None:
        vectors = _embed(embedder, [(row.content, row.tags, row.contexts) for row in rows])
        for row, vector in zip(rows, vectors, strict=True):
            row.embedding = vector


def derive(rows: Sequence[dict[str, Any]], embedder: Embedder | None) -> None:
    """Set ``search_text``, and ``embedding`` when ``embedder`` is given, in column values
    inserted through Core: what the hooks above do for ORM rows."""
    for row in rows:
        row["search_text"] = search_text(row["content"], row["tags"] or (), row["contexts"] or ())
    if embedder is not None:
        vectors = _embed(embedder, [(row["content"], row["tags"], row["contexts"]) for row in rows])
        for row, vector in zip(rows, vectors, strict=True):
            row["embedding"] = vector


def _embed(embedder: Embedder, rows: Sequence[tuple[str, Any, Any]]) -> list[bytes]:
    """The stored vector of each ``(content, tags, contexts)``, ``EMBED_BATCH`` texts per model call."""
    texts = [semantic.memory_text(content, tags or (), contexts or ()) for content, tags, contexts in rows]
    return [
        semantic.to_blob(vector)
        for start in range(0, len(texts), EMBED_BATCH)
        for vector in embedder(texts[start : start + EMBED_BATCH])
    ]


_TABLE: sa.Table = MemoryRow.__table__  # type: ignore[attr-defined]


def _inputs_where_missing(derived: str) -> Select[tuple[int, str, Any, Any]]:
    """pk and what a row's derived columns come from (content, tags, contexts), for the rows
    whose ``derived`` column is still NULL."""
    inputs = sa.select(col(MemoryRow.pk), col(MemoryRow.content), col(MemoryRow.tags), col(MemoryRow.contexts))
    return inputs.where(_TABLE.c[derived].is_(None))


def _set_by_pk(column: str) -> Update:
    """``UPDATE memory SET column = :value WHERE pk = :row_pk``, for executemany."""
    return _TABLE.update().where(_TABLE.c.pk == sa.bindparam("row_pk")).values({column: sa.bindparam("value")})


def backfill(connection: Connection) -> int:
    """Set ``search_text`` wherever it is NULL; returns how many rows were filled."""
    pending = _inputs_where_missing("search_text").limit(BACKFILL_BATCH)
    update = _set_by_pk("search_text")
    filled = 0
    while rows := connection.execute(pending.add_columns(col(MemoryRow.org_id))).all():
        connection.execute(update, [{"row_pk": pk, "value": search_text(c, t or (), x or ())} for pk, c, t, x, _ in rows])
        touched: dict[str, list[int]] = {}
        for pk, *_, org_id in rows:
            touched.setdefault(org_id, []).append(pk)
        changes.record(connection, connection.dialect.name, touched)  # replicas' postings hold the old text
        filled += len(rows)
    return filled


def backfill_embeddings(engine: Engine, embedder: Embedder, on_batch: Callable[[int], None] = lambda n: None) -> int:
    """Compute the vector of every row that has none; returns how many were filled.

    ``EMBED_BATCH`` rows at a time, walked in primary-key order, each batch's vectors
    written in a transaction of their own and computed outside any (the model is the
    slow part; rows are never changed in place, so what was read stays true). Work done
    survives an interruption and a rerun picks up where it stopped. ``on_batch`` is
    told how many rows each batch filled (for a progress bar).
    """
    pending = _inputs_where_missing("embedding").order_by(col(MemoryRow.pk)).limit(EMBED_BATCH)
    update = _set_by_pk("embedding")
    filled, after = 0, 0
    while True:
        with engine.connect() as connection:
            rows = connection.execute(pending.where(col(MemoryRow.pk) > after)).all()
        if not rows:
            return filled
        vectors = _embed(embedder, [(content, tags, contexts) for _, content, tags, contexts in rows])
        with engine.begin() as connection:
            connection.execute(update, [{"row_pk": row[0], "value": vector} for row, vector in zip(rows, vectors, strict=True)])
        filled, after = filled + len(rows), rows[-1][0]
        on_batch(len(rows))


def missing_embeddings(engine: Engine) -> int:
    """How many rows have no vector yet."""
    with engine.connect() as connection:
        return int(connection.execute(sa.select(sa.func.count()).where(col(MemoryRow.embedding).is_(None))).scalar_one())
