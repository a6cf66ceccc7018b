"""Schema migrations (Alembic), run in-process: ``upgrade(engine, install)``.

Every start (app, CLI) and ``memory-bank db upgrade`` call this, so a deployment
never runs on a schema older than its code. Several replicas may start at once:
on MySQL/MariaDB the advisory lock of ``bootstrap_mysql`` makes them take turns,
on SQLite the whole upgrade is one ``BEGIN IMMEDIATE`` transaction (the engine
handed in carries the write option); the one that comes second finds the head
revision applied and does nothing.

The full-text index is not a revision: it belongs to the search backend
(``install``), which adds it when absent, under the same lock. It is derived data,
so a database restored without it, or a bulk load that drops it and adds it back
afterwards (much faster than indexing row by row), heals at the next start.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection, Engine

from memory_bank.store.bootstrap_mysql import advisory_lock

_HERE = Path(__file__).parent


def head() -> str:
    """The newest revision: what ``upgrade`` brings every database to."""
    current = ScriptDirectory.from_config(_config()).get_current_head()
    assert current is not None  # the package ships its revisions
    return current


def _config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(_HERE))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


@contextmanager
def _serialized(engine: Engine) -> Iterator[Connection]:
    """A connection in a transaction that no other process migrating this database shares."""
    if engine.dialect.name == "sqlite":
        with engine.begin() as connection:
            yield connection
        return
    with engine.connect() as connection, advisory_lock(connection):
        connection.commit()  # GET_LOCK began a transaction; the lock belongs to the session, not to it
        with connection.begin():
            yield connection


def revision(connection: Connection) -> str | None:
    """The revision the database is at (None before the first upgrade)."""
    return MigrationContext.configure(connection).get_current_revision()


def upgrade(engine: Engine, install: Callable[[Connection], None]) -> tuple[str | None, str | None]:
    """Apply pending revisions, then ``install`` the search index; returns (before, after)."""
    with _serialized(engine) as connection:
        before = revision(connection)
        command.upgrade(_config(connection), "head")
        install(connection)
        return before, revision(connection)
