"""Engine, schema and transactions for the configured database.

``open_database(settings)`` is the one entry point the app and the CLI use. On
SQLite (the embedded default) every connection runs in WAL mode with foreign keys
and a busy timeout, and write transactions start with ``BEGIN IMMEDIATE``: a
deferred transaction that reads and then writes fails at once with "database is
locked" when another writer committed in between, whereas an immediate one waits
its turn (up to the busy timeout).

Engines never put statement parameters into exception text (``hide_parameters``):
those are memory content and token hashes, and exception text ends up in logs.
A lock that is still held when the wait runs out is ``DatabaseBusy`` (503, retry),
not an unreachable database: the server answered, it was only contended.

SQLite has one writer at a time, and its busy handler is no queue: waiting writers
poll with growing sleeps, so under a burst a few of them lose every round and run out
of time while the file is free most of the time. Write transactions of one process
therefore queue for the file (``contention.writer_queue``) before they touch it; the
busy timeout is left to arbitrate between processes.
"""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlmodel import Session

from memory_bank.settings import Settings
from memory_bank.store import tables  # noqa: F401  (registers the tables on SQLModel.metadata)
from memory_bank.store import migrations
from memory_bank.store.contention import SQLITE_WRITE_QUEUE_SECONDS, DatabaseBusy, contention, writer_queue
from memory_bank.store.search.backend import SearchBackend
from memory_bank.store.search.backends.mysql import MysqlSearch
from memory_bank.store.search import changes, sqlite_vectors
from memory_bank.store.search.backends.sqlite import SqliteSearch, register_functions
from memory_bank.store.search.semantic import VectorIndex
from memory_bank.store.search.vector_cache import CachedVectors

SQLITE_BUSY_TIMEOUT_MS = 5000
MYSQL_POOL_RECYCLE_SECONDS = 1800
#: Per replica: the worker threads that run store calls, plus headroom for bursts.
MYSQL_POOL_SIZE = 20
MYSQL_POOL_OVERFLOW = 20
#: A read waits this much longer than a lock may, so a lock wait that runs out is told as such.
MYSQL_LOCK_WAIT_MARGIN_SECONDS = 2
_WRITE = "memory_bank_write"
#: A write that gives up at once when the database is busy (bookkeeping such as a token's last use).
_NO_WAIT = "memory_bank_no_wait"
def _json_serializer(value: Any) -> str:
    # Keep non-ASCII tags readable in the stored text: the FTS index tokenizes it.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def make_engine(url: str, timeout_seconds: int | None = None) -> Engine:
    """An engine for ``url``; on MySQL/MariaDB with ``timeout_seconds`` (setting
    ``database_timeout_seconds``), no connect, lock wait or read of an answer outlasts it.
    Without, nothing is bounded: a migration of a big table takes what it takes."""
    if not url.startswith("sqlite"):
        bounded: dict[str, Any] = {} if timeout_seconds is None else {
            "connect_timeout": timeout_seconds,
            "read_timeout": timeout_seconds + MYSQL_LOCK_WAIT_MARGIN_SECONDS,
            "write_timeout": timeout_seconds,
            "init_command": f"SET SESSION innodb_lock_wait_timeout = {int(timeout_seconds)}",
        }
        pool_wait: dict[str, Any] = {} if timeout_seconds is None else {"pool_timeout": timeout_seconds}
        # pre_ping and a recycle well under wait_timeout: a replica idle overnight, or a
        # database failover, must not hand the next request a dead connection. A server that
        # stops answering (a partition, not a refusal) is a read that never ends without a
        # read timeout; the lock wait ends first, so contention is still told as busy (1205).
        return sa.create_engine(
            url,
            json_serializer=_json_serializer,
            hide_parameters=True,
            pool_pre_ping=True,
            pool_recycle=MYSQL_POOL_RECYCLE_SECONDS,
            pool_size=MYSQL_POOL_SIZE,
            max_overflow=MYSQL_POOL_OVERFLOW,
            connect_args={"charset": "utf8mb4", **bounded},
            **pool_wait,
        )
    sqlite_vectors.register()  # before the first connection: the vector index's triggers need vec0
    engine = sa.create_engine(
        url, json_serializer=_json_serializer, hide_parameters=True, connect_args={"check_same_thread": False}
    )

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event, not the driver, decide how transactions start.
        dbapi_connection.isolation_level = None
        for pragma in (f"busy_timeout={SQLITE_BUSY_TIMEOUT_MS}", "foreign_keys=ON"):
            dbapi_connection.execute(f"PRAGMA {pragma}")
        _use_wal(dbapi_connection)
        register_functions(dbapi_connection)  # the tags filter reads NULs through it

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        options = connection.get_execution_options()
        if options.get(_WRITE, False):
            # Set on every write, since a pooled connection may come from one that would not wait.
            waits = 0 if options.get(_NO_WAIT, False) else SQLITE_BUSY_TIMEOUT_MS
            connection.exec_driver_sql(f"PRAGMA busy_timeout={waits}")
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            connection.exec_driver_sql("BEGIN")

    return engine


def _use_wal(dbapi_connection: sqlite3.Connection) -> None:
    """Put the file in WAL mode (a property of the file, so usually already done).

    Two connections switching a fresh file at the same moment: the loser gets "database
    is locked" at once, without its busy handler being asked to wait (seen as a 1-in-13
    failure of four processes starting together), so it retries within the busy timeout.
    """
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            dbapi_connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def search_backend(engine: Engine) -> SearchBackend:
    """The full-text backend for this engine's dialect."""
    if engine.dialect.name == "sqlite":
        return SqliteSearch()
    if engine.dialect.name in ("mysql", "mariadb"):
        return MysqlSearch()
    raise NotImplementedError(f"no full-text search backend for {engine.dialect.name!r} yet")


def vector_index(engine: Engine, budget: int) -> VectorIndex | None:
    """The nearest-neighbour index for this engine's dialect (``budget``: bytes an in-process one
    may hold), or None when its package of the ``semantic`` extra is missing (``sqlite-vec`` on
    SQLite, ``usearch`` on MariaDB/MySQL): searches then scan, on either backend alike."""
    if engine.dialect.name == "sqlite":
        with engine.connect() as connection:
            return sqlite_vectors.SqliteVectors() if sqlite_vectors.loaded(connection) else None
    return CachedVectors(budget) if importlib.util.find_spec("usearch") is not None else None


def create_schema(engine: Engine) -> tuple[str | None, str | None]:
    """Apply pending migrations, then add the search indexes if missing; (revision before, after).

    Safe on every start, also when several replicas start at once (``store.migrations``).
    """
    backend = search_backend(engine)

    def install(connection: Connection) -> None:
        backend.install(connection)
        if engine.dialect.name == "sqlite":
            sqlite_vectors.install(connection)

    return migrations.upgrade(engine.execution_options(**{_WRITE: True}), install)


def open_database(settings: Settings) -> Engine:
    """An engine for ``settings.database_url`` with the schema in place."""
    engine = make_engine(settings.database_url)  # unbounded, for the migrations: see make_engine
    try:
        create_schema(engine)
    except BaseException:
        engine.dispose()
        raise
    if engine.dialect.name == "sqlite":
        return engine
    engine.dispose()
    return make_engine(settings.database_url, settings.database_timeout_seconds)


@contextmanager
def transaction(
    engine: Engine, *, write: bool = False, wait: bool = True, read_committed: bool = False
) -> Iterator[Session]:
    """One unit of work, committed on success and rolled back on any exception.

    Objects stay readable after commit (``expire_on_commit=False``): rows are
    handed back to handlers after the session is gone. A write with ``wait=False`` is
    ``DatabaseBusy`` at once where another holds SQLite's write lock, instead of waiting
    for it: bookkeeping that a read does on the way must not make the read wait on writers.
    ``read_committed`` runs it at READ COMMITTED on MySQL/MariaDB, for this transaction only
    (``SET TRANSACTION`` before its first statement, the only time it can be); SQLite's
    transactions are serializable either way. Not SQLAlchemy's ``isolation_level`` option: that
    sets the session's level and puts it back as the connection returns to the pool, and on a
    connection lost just after COMMIT the putting back raised the driver's own error, a 500
    for a write that was stored (a hostile pass).
    """
    bind = engine.execution_options(**{_WRITE: True, _NO_WAIT: not wait}) if write else engine
    queue = writer_queue(engine, SQLITE_WRITE_QUEUE_SECONDS if wait else 0) if write else nullcontext()
    try:
        with queue, Session(bind, expire_on_commit=False) as session, session.begin():
            if read_committed and engine.dialect.name == "mysql":
                session.execute(sa.text("SET TRANSACTION ISOLATION LEVEL READ COMMITTED"))
            yield session
            changes.write(session)  # last before COMMIT: see store.search.changes
    except DBAPIError as exc:
        busy = contention(exc)
        if busy is not None:
            raise busy from exc
        raise
    except PoolTimeout as exc:  # every connection of the pool stayed in use for the whole wait
        raise DatabaseBusy() from exc
