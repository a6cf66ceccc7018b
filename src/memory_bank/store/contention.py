"""Telling a contended database from a broken one, and queueing SQLite writers.

A lock wait that ran out, or a deadlock victim, means the server answered and a retry
will likely succeed: ``DatabaseBusy`` (503 with Retry-After), never "unreachable".
SQLite's busy handler is no queue (waiting writers poll with growing sleeps, and under
a burst a few lose every round), so the writes of one process take turns on a lock
per file first (``writer_queue``).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from memory_bank.errors import BackendUnavailable

#: How long a write waits for this process's earlier writes to one SQLite file.
SQLITE_WRITE_QUEUE_SECONDS = 30.0
#: MySQL/MariaDB: lock wait timeout exceeded, deadlock found (the transaction was rolled back).
_MYSQL_DEADLOCK = 1213
_MYSQL_CONTENTION = frozenset({1205, _MYSQL_DEADLOCK})
_SQLITE_CONTENTION = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
BUSY_RETRY_AFTER_SECONDS = 1


class DatabaseBusy(BackendUnavailable):
    """The database is up but a lock could not be had in time: a retry will likely succeed.

    ``deadlock``: the server chose this transaction as a deadlock victim, which it does
    at once, so retrying right away costs nothing (a lock wait that ran out already waited).
    """

    def __init__(self, *, deadlock: bool = False) -> None:
        super().__init__("the database is busy with other writes; retry shortly", retry_after=BUSY_RETRY_AFTER_SECONDS)
        self.deadlock = deadlock


_writer_queues: dict[str, threading.RLock] = {}
_writer_queues_guard = threading.Lock()


@contextmanager
def writer_queue(engine: Engine) -> Iterator[None]:
    """Take this process's turn to write to the engine's SQLite file; a no-op elsewhere.

    Re-entrant, so a write nested in another one on the same thread cannot wait for itself.
    """
    if engine.dialect.name != "sqlite" or not engine.url.database or engine.url.database == ":memory:":
        yield
        return
    path = os.path.realpath(engine.url.database)
    with _writer_queues_guard:
        queue = _writer_queues.setdefault(path, threading.RLock())
    if not queue.acquire(timeout=SQLITE_WRITE_QUEUE_SECONDS):
        raise DatabaseBusy()
    try:
        yield
    finally:
        queue.release()


def driver_code(exc: DBAPIError) -> int | None:
    """The driver's numeric error code (sqlite3's extended code, MySQL's server error number)."""
    orig = exc.orig
    if isinstance(orig, sqlite3.Error):
        return getattr(orig, "sqlite_errorcode", None)
    args = getattr(orig, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def contention(exc: DBAPIError) -> DatabaseBusy | None:
    """``DatabaseBusy`` when ``exc`` is a lock wait that ran out or a deadlock victim, else None."""
    code = driver_code(exc)
    if code is None:
        return None
    if isinstance(exc.orig, sqlite3.Error):
        return DatabaseBusy() if code & 0xFF in _SQLITE_CONTENTION else None
    return DatabaseBusy(deadlock=code == _MYSQL_DEADLOCK) if code in _MYSQL_CONTENTION else None
