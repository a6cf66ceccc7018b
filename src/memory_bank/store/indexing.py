"""What a memory row carries for search, derived when the row is inserted.

``search_text`` (``store.text``) and, when semantic search is on, ``embedding``
(``store.embeddings``) are set by an ORM ``before_insert`` hook on ``MemoryRow``
rather than by each writer: saves, patches, keypath puts and imports all insert
rows, and a hook cannot be forgotten by the next path that does. Rows are never
updated in place, so nothing has to be derived again.

The embedder rides on the engine as the execution option ``EMBEDDER_OPTION``
(``MemoryStore(engine, embedder)`` sets it), so only the stores that were given
one compute vectors, and tests, CLI and app need no process-wide switch.

``backfill`` fills ``search_text`` of rows written before the column existed; the
search backends run it at start-up (``install``), under the schema lock.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection
from sqlmodel import col

from memory_bank.store import embeddings
from memory_bank.store.tables import MemoryRow
from memory_bank.store.text import search_text

EMBEDDER_OPTION = "memory_bank_embedder"
#: Rows filled per UPDATE round trip by ``backfill``.
BACKFILL_BATCH = 1000


@event.listens_for(MemoryRow, "before_insert")
def _derive(_mapper: Any, connection: Connection, row: MemoryRow) -> None:
    row.search_text = search_text(row.content, row.tags or (), row.contexts or ())
    embedder = connection.get_execution_options().get(EMBEDDER_OPTION)
    if embedder is not None and row.embedding is None:
        row.embedding = embeddings.to_blob(embedder([embeddings.memory_text(row.content, row.tags or (), row.contexts or ())])[0])


def backfill(connection: Connection) -> int:
    """Set ``search_text`` wherever it is NULL; returns how many rows were filled."""
    table = MemoryRow.__table__  # type: ignore[attr-defined]
    pending = sa.select(col(MemoryRow.pk), col(MemoryRow.content), col(MemoryRow.tags), col(MemoryRow.contexts))
    pending = pending.where(col(MemoryRow.search_text).is_(None)).limit(BACKFILL_BATCH)
    update = table.update().where(table.c.pk == sa.bindparam("row_pk")).values(search_text=sa.bindparam("text"))
    filled = 0
    while rows := connection.execute(pending).all():
        connection.execute(update, [{"row_pk": pk, "text": search_text(c, t or (), x or ())} for pk, c, t, x in rows])
        filled += len(rows)
    return filled
