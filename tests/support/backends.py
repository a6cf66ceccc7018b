"""The databases a test run uses: SQLite always, MariaDB/MySQL when a server is configured.

``MEMORY_BANK_TEST_MYSQL_URL`` names a server account (any database in the URL is
only used to connect); each run creates its own ``mb_test_<random>`` database on
it and drops it at the end. Without a server, or without mysqlclient, MySQL cases
skip with the reason, except in CI (``support.requirements``): the production
backend must be tested there.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import URL, Engine, make_url

from memory_bank.store.database import make_engine
from support.requirements import unavailable


def free_port() -> int:
    """A loopback port nothing listens on now, for a server a test starts itself."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


MYSQL_URL_VARIABLE = "MEMORY_BANK_TEST_MYSQL_URL"
MYSQL = "the MySQL/MariaDB suite"


def mysql_server() -> URL:
    """The configured server, checked reachable; skips or fails (``unavailable``) otherwise."""
    raw = os.environ.get(MYSQL_URL_VARIABLE)
    if not raw:
        unavailable(MYSQL, f"{MYSQL_URL_VARIABLE} is not set", "e.g. mysql+mysqldb://root@127.0.0.1:3306/test")
    try:
        import MySQLdb  # noqa: F401
    except ImportError as exc:
        unavailable(MYSQL, f"mysqlclient is not installed ({exc})", "pip install -e '.[mysql]'")
    url = make_url(raw)
    engine = sa.create_engine(url)
    try:
        with engine.connect():
            pass
    except sa.exc.OperationalError as exc:
        unavailable(MYSQL, f"cannot reach {url.render_as_string(hide_password=True)}: {exc.orig}")
    finally:
        engine.dispose()
    return url


@contextmanager
def fresh_database(server: URL) -> Iterator[str]:
    """A new, empty ``mb_test_<random>`` database on ``server``; dropped on exit. Yields its URL."""
    name = f"mb_test_{secrets.token_hex(6)}"
    admin = sa.create_engine(server)
    try:
        with admin.connect() as connection:
            connection.exec_driver_sql(f"CREATE DATABASE {name} CHARACTER SET utf8mb4")
        try:
            yield server.set(database=name).render_as_string(hide_password=False)
        finally:
            with admin.connect() as connection:
                connection.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}")
    finally:
        admin.dispose()


@contextmanager
def empty_database(backend: str, folder: Path) -> Iterator[Engine]:
    """An engine on a database with no tables yet (``sqlite`` in ``folder``, or ``mysql``), for migrating by hand."""
    if backend == "sqlite":
        engine = make_engine(f"sqlite:///{folder / 'old.db'}")
        yield engine
        engine.dispose()
        return
    with fresh_database(mysql_server()) as url:
        engine = make_engine(url)
        yield engine
        engine.dispose()


def empty_tables(url: str) -> None:
    """Delete every row, keeping the migrated schema: a clean slate in milliseconds."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as connection:
            connection.exec_driver_sql("SET FOREIGN_KEY_CHECKS = 0")  # this session only
            for table in sa.inspect(connection).get_table_names():
                if table != "alembic_version":
                    connection.exec_driver_sql(f"DELETE FROM {table}")
    finally:
        engine.dispose()


#: For a test of a SQLite-only search feature (porter stemming, tag words as text):
#: InnoDB FULLTEXT has neither, as ``store.search.backends.mysql`` says.
sqlite_only = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)

#: For a test of the MySQL/MariaDB backend itself.
mysql_only = pytest.mark.parametrize("database_url", [pytest.param("mysql", marks=pytest.mark.mysql)], indirect=True)


def redis_server() -> str:
    """The shared test Redis (``MEMORY_BANK_TEST_REDIS_URL``, else the local default), checked reachable."""
    import redis

    url = os.environ.get("MEMORY_BANK_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    client = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
    try:
        client.ping()
    except redis.RedisError as exc:
        unavailable("the Redis tests", f"cannot reach Redis at {url}: {exc}", "MEMORY_BANK_TEST_REDIS_URL")
    finally:
        client.close()
    return url
