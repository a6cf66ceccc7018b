"""Telling a contended database from a broken one, and queueing SQLite writers.

A lock wait that ran out, or a deadlock victim, means the server answered and a retry
will likely succeed: ``DatabaseBusy`` (503 with Retry-After), never "unreachable"; a
deadlock victim was rolled back at once, so its unit of work is simply run again
(``retried_after_deadlock``).
SQLite's busy handler is no queue (waiting writers poll with growing sleeps, and under
a burst a few lose every round), so the writes of one process take turns on a lock
per file first (``writer_queue``).
"""

from __future__ import annotations

import functools
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from memory_bank.errors import BackendUnavailable

#: How long a write waits for this process's earlier writes to one SQLite file.
SQLITE_WRITE_QUEUE_SECONDS = 30.0
#: MySQL/MariaDB: lock wait timeout exceeded, deadlock found (the transaction was rolled back).
_MYSQL_DEADLOCK = 1213
_MYSQL_CONTENTION = frozenset({1205, _MYSQL_DEADLOCK})
#: Runs of a unit of work the database chose as a deadlock victim before its 503 is passed on.
DEADLOCK_ATTEMPTS = 4
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
def writer_queue(engine: Engine, wait_seconds: float = SQLITE_WRITE_QUEUE_SECONDS) -> Iterator[None]:
    """Take this process's turn to write to the engine's SQLite file, waiting at most
    ``wait_seconds`` for it (0: not at all); a no-op elsewhere.

    Re-entrant, so a write nested in another one on the same thread cannot wait for itself.
    """
    if engine.dialect.name != "sqlite" or not engine.url.database or engine.url.database == ":memory:":
        yield
        return
    path = os.path.realpath(engine.url.database)
    with _writer_queues_guard:
        queue = _writer_queues.setdefault(path, threading.RLock())
    if not queue.acquire(timeout=wait_seconds):
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
    """``DatabaseBusy`` when ``exc`` is a lock wait that ran out or a deadlock victim, else None.

    The errors ``exc`` was raised while handling count too: InnoDB rolls a deadlock victim
    back whole, so a deadlock inside a savepoint surfaces as the ROLLBACK TO SAVEPOINT
    that then fails ("SAVEPOINT does not exist").
    """
    error: BaseException | None = exc
    while error is not None:
        busy = _busy(error) if isinstance(error, DBAPIError) else None
        if busy is not None:
            return busy
        error = error.__context__
    return None


def _busy(exc: DBAPIError) -> DatabaseBusy | None:
    code = driver_code(exc)
    if code is None:
        return None
    if isinstance(exc.orig, sqlite3.Error):
        return DatabaseBusy() if code & 0xFF in _SQLITE_CONTENTION else None
    return DatabaseBusy(deadlock=code == _MYSQL_DEADLOCK) if code in _MYSQL_CONTENTION else None


P = ParamSpec("P")
T = TypeVar("T")


def retried_after_deadlock(work: Callable[P, T]) -> Callable[P, T]:
    """Run ``work`` again when the database chose it as a deadlock victim.

    Two writers that each hold a lock the other wants (two memories swapping their words
    swap content keys) are not a fault of either: the victim's transaction was rolled
    back, so running it again starts clean and finds the winner's rows committed.
    """

    @functools.wraps(work)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        attempts = DEADLOCK_ATTEMPTS
        while True:
            try:
                return work(*args, **kwargs)
            except DatabaseBusy as busy:
                attempts -= 1
                if not busy.deadlock or attempts == 0:
                    raise

    return run
