"""The SQLite vector index: a ``sqlite-vec`` ``vec0`` table beside ``memory`` (``semantic`` extra).

``memory_vectors`` holds one row per memory that has a vector and whose chain is not
deleted: rowid = ``memory.pk``, partitioned by organisation and *holder* (``u:<user>`` for a
user's own rows, ``org`` for rows shared with the organisation), so a KNN query reads only
the vectors one reader may see, and ``live`` (the current version) as a metadata column
so a search of current memories skips old versions inside the scan. The scan is exact
(brute force in C), so results equal the full scan's.

Triggers on ``memory`` keep it in step, in the writing transaction, with every writer
(inserts, stamps, imports, the embedding backfill): no write path can forget it. Triggers
need the module on every connection that writes, so ``database.make_engine`` loads it on
every SQLite connection whenever the package is installed; a start without it drops the
triggers (writes then work without the module) and the next start with it rebuilds the
table from ``memory.embedding``. That is why this is installed at start, like the
full-text index, and not by a migration: a migration runs on machines without the
extension, and the table is derived data that can always be rebuilt.
"""

from __future__ import annotations

import ctypes
import functools
import glob
from typing import Any

from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError
from sqlmodel import Session

from memory_bank.store.search.semantic import Reader
from memory_bank.textsearch.embeddings import DIMENSIONS

__all__ = ["SqliteVectors", "install", "loaded", "register"]

TABLE = "memory_vectors"
TRIGGERS = (f"{TABLE}_insert", f"{TABLE}_update", f"{TABLE}_delete")

#: The index row of the memory rows ``m`` the condition selects (skipping deleted chains).
_ROWS = f"""
INSERT INTO {TABLE}(rowid, org_id, holder, live, embedding)
SELECT m.pk, m.org_id, CASE m.scope WHEN 'org' THEN 'org' ELSE 'u:' || m.user_id END,
       m.superseded_at IS NULL AND m.deleted_at IS NULL, m.embedding
FROM memory AS m
WHERE {{which}} AND length(m.embedding) = {4 * DIMENSIONS}
  AND NOT EXISTS (SELECT 1 FROM memory AS t WHERE t.chain_id = m.chain_id AND t.deleted_at IS NOT NULL)
"""
#: A tombstone hides its whole chain (``filters.not_deleted``), so it takes the chain's vectors out.
_FORGET_CHAIN = f"DELETE FROM {TABLE} WHERE NEW.deleted_at IS NOT NULL AND rowid IN (SELECT pk FROM memory WHERE chain_id = NEW.chain_id)"

_SCHEMA = (
    f"CREATE VIRTUAL TABLE {TABLE} USING vec0(org_id text partition key, holder text partition key,"
    f" live integer, embedding float[{DIMENSIONS}] distance_metric=cosine)",
    f"CREATE TRIGGER {TRIGGERS[0]} AFTER INSERT ON memory BEGIN"
    f" {_ROWS.format(which='m.pk = NEW.pk')}; {_FORGET_CHAIN}; END",
    f"CREATE TRIGGER {TRIGGERS[1]} AFTER UPDATE OF superseded_at, deleted_at, embedding ON memory BEGIN"
    f" DELETE FROM {TABLE} WHERE rowid = NEW.pk; {_ROWS.format(which='m.pk = NEW.pk')}; {_FORGET_CHAIN}; END",
    f"CREATE TRIGGER {TRIGGERS[2]} AFTER DELETE ON memory BEGIN DELETE FROM {TABLE} WHERE rowid = OLD.pk; END",
)


@functools.cache
def register() -> bool:
    """Make every SQLite connection this process opens from now on load ``sqlite-vec``; False
    when the package is not installed.

    The documented way (``enable_load_extension``) is missing from Pythons built without
    loadable-extension support (pyenv's default among them), so the extension is registered
    as an auto-extension of the SQLite library the ``sqlite3`` module runs on instead: the
    same effect, once per process, for every build. A build where that fails reports the
    index missing (``loaded``) and search falls back to the full scan.
    """
    try:
        import sqlite_vec
    except ImportError:
        return False
    import _sqlite3

    try:
        library = ctypes.CDLL(_sqlite3.__file__)  # resolves sqlite3_* in the module or the library it links
        extension = ctypes.CDLL(next(glob.iglob(sqlite_vec.loadable_path() + ".*")))  # .so, .dylib or .dll
        return int(library.sqlite3_auto_extension(extension.sqlite3_vec_init)) == 0
    except (OSError, AttributeError, StopIteration):  # no such library or symbol on this platform
        return False


def loaded(connection: Connection) -> bool:
    """Whether this connection has the ``vec0`` module."""
    try:
        connection.exec_driver_sql("SELECT vec_version()")
    except OperationalError:  # no such function
        return False
    return True


def _triggers(connection: Connection) -> set[str]:
    names = connection.exec_driver_sql(f"SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE '{TABLE}_%'")
    return {name for (name,) in names}


def install(connection: Connection) -> None:
    """Create and fill the index if it is missing or was left behind; drop its triggers when this
    process has no ``vec0`` module (safe to run on every start, under the schema lock)."""
    present = _triggers(connection)
    if not loaded(connection):
        for name in present:
            connection.exec_driver_sql(f"DROP TRIGGER {name}")
        return
    if present == set(TRIGGERS):
        return
    for name in present:
        connection.exec_driver_sql(f"DROP TRIGGER {name}")
    connection.exec_driver_sql(f"DROP TABLE IF EXISTS {TABLE}")
    for statement in _SCHEMA:
        connection.exec_driver_sql(statement)
    connection.exec_driver_sql(_ROWS.format(which="1"))


class SqliteVectors:
    """``semantic.VectorIndex`` over ``memory_vectors``: one exact KNN per partition the reader sees."""

    def candidates(self, session: Session, reader: Reader, query: Any, k: int) -> list[int] | None:
        import numpy as np

        connection = session.connection()
        if _triggers(connection) != set(TRIGGERS):  # another process without the module dropped them
            return None
        knn = (
            f"SELECT rowid, distance FROM {TABLE} WHERE embedding MATCH ? AND k = ? AND org_id = ? AND holder = ?"
            + (" AND live = 1" if reader.current_only else "")
        )
        vector = np.asarray(query, dtype="<f4").tobytes()
        found: list[tuple[float, int]] = []
        for holder in ("org", f"u:{reader.user_id}"):
            rows = connection.exec_driver_sql(knn, (vector, k, reader.org_id, holder))
            found += [(distance, pk) for pk, distance in rows]
        return [pk for _, pk in sorted(found)[:k]]
