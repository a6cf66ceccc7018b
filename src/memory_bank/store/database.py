"""Engine, schema and transactions for the configured database.

``open_database(settings)`` is the one entry point the app and the CLI use. On
SQLite (the embedded default) every connection runs in WAL mode with foreign keys
and a busy timeout, and write transactions start with ``BEGIN IMMEDIATE``: a
deferred transaction that reads and then writes fails at once with "database is
locked" when another writer committed in between, whereas an immediate one waits
its turn (up to the busy timeout).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Session, SQLModel

from memory_bank.settings import Settings
from memory_bank.store import agents_table, audit_table, tables  # noqa: F401  (registers the tables on SQLModel.metadata)
from memory_bank.store.search import SearchBackend
from memory_bank.store.search_sqlite import SqliteSearch

SQLITE_BUSY_TIMEOUT_MS = 5000
_WRITE = "memory_bank_write"


def _json_serializer(value: Any) -> str:
    # Keep non-ASCII tags readable in the stored text: the FTS index tokenizes it.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def make_engine(url: str) -> Engine:
    if not url.startswith("sqlite"):
        return sa.create_engine(url, json_serializer=_json_serializer, pool_pre_ping=True)
    engine = sa.create_engine(
        url, json_serializer=_json_serializer, connect_args={"check_same_thread": False}
    )

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event, not the driver, decide how transactions start.
        dbapi_connection.isolation_level = None
        for pragma in ("journal_mode=WAL", "foreign_keys=ON", f"busy_timeout={SQLITE_BUSY_TIMEOUT_MS}"):
            dbapi_connection.execute(f"PRAGMA {pragma}")

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        write = connection.get_execution_options().get(_WRITE, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


def search_backend(engine: Engine) -> SearchBackend:
    """The full-text backend for this engine's dialect."""
    if engine.dialect.name == "sqlite":
        return SqliteSearch()
    raise NotImplementedError(f"no full-text search backend for {engine.dialect.name!r} yet")


def create_schema(engine: Engine) -> None:
    """Create the tables and the search index if missing; safe on every start."""
    SQLModel.metadata.create_all(engine)
    with engine.begin() as connection:
        search_backend(engine).install(connection)


def open_database(settings: Settings) -> Engine:
    """An engine for ``settings.database_url`` with the schema in place."""
    engine = make_engine(settings.database_url)
    create_schema(engine)
    return engine


@contextmanager
def transaction(engine: Engine, *, write: bool = False) -> Iterator[Session]:
    """One unit of work, committed on success and rolled back on any exception.

    Objects stay readable after commit (``expire_on_commit=False``): rows are
    handed back to handlers after the session is gone.
    """
    bind = engine.execution_options(**{_WRITE: True}) if write else engine
    with Session(bind, expire_on_commit=False) as session, session.begin():
        yield session
