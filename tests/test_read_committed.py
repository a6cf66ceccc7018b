"""A keypath write runs at READ COMMITTED on MariaDB for that one transaction, and a connection lost
just after its COMMIT does not turn the stored write into an error.

The level was SQLAlchemy's ``isolation_level`` option, which sets the session's level and puts
it back as the connection returns to the pool; on a connection lost after COMMIT, putting it
back raised the driver's own error, which no handler knew: a 500 ``backend_error`` for a PUT
whose value was stored (a hostile pass, 3 of about 300 PUTs while connections were killed).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session
from support import backends
from support.clients import DEFAULT_AGENT
from support.requirements import mysql_driver

from memory_bank.store import MemoryStore
from memory_bank.store.database import make_engine, transaction
from memory_bank.store.tables import AgentRow

pytestmark = pytest.mark.mysql
MySQLdb = mysql_driver()


@pytest.fixture
def mysql_engine(mysql_run_database: str) -> Iterator[Engine]:
    backends.empty_tables(mysql_run_database)
    engine = make_engine(mysql_run_database)
    yield engine
    engine.dispose()


def agents(session: Session) -> int:
    return session.execute(sa.select(sa.func.count()).select_from(AgentRow)).scalar_one()


def test_read_committed_sees_what_others_commit_meanwhile_and_the_default_does_not(mysql_engine: Engine) -> None:
    for name, read_committed in (("late", True), ("later", False)):
        with transaction(mysql_engine, read_committed=read_committed) as session:
            before = agents(session)
            with mysql_engine.begin() as other:
                other.execute(sa.insert(AgentRow).values(org_id="acme", id=name, name=name))
            seen = agents(session) - before
        assert seen == (1 if read_committed else 0), name  # REPEATABLE READ, InnoDB's default, keeps its snapshot


def test_a_connection_lost_as_it_returns_to_the_pool_leaves_a_keypath_write_answered(
    mysql_engine: Engine, make_principal: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hostile pass's own fault, injected where it struck: the connection dies after COMMIT
    and the pool's rollback, as its session level would be put back. A level set for the one
    transaction leaves nothing to put back, so no statement meets the dead connection."""
    store = MemoryStore(mysql_engine)
    principal = make_principal("acme", "ann", DEFAULT_AGENT)
    store.put_keypath(principal, "vault.door", {"content": "one"})
    dialect = mysql_engine.dialect
    put_back = dialect.reset_isolation_level

    def lose_the_connection_first(dbapi_connection: Any) -> None:
        url = mysql_engine.url
        admin = MySQLdb.connect(host=url.host, port=url.port or 3306, user=url.username, password=url.password or "")
        admin.cursor().execute(f"KILL {dbapi_connection.thread_id()}")
        admin.close()
        put_back(dbapi_connection)

    monkeypatch.setattr(dialect, "reset_isolation_level", lose_the_connection_first)
    row, created = store.put_keypath(principal, "vault.door", {"content": "two"})
    monkeypatch.undo()
    assert (row.content, row.version, created) == ("two", 2, False)
    assert store.get_keypath(principal, "vault.door").content == "two"
