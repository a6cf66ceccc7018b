"""Start-up work that must happen once per MySQL/MariaDB database, whoever starts first.

Replicas start together: each one runs the migrations and checks the FULLTEXT index
at start-up. ``advisory_lock`` (``GET_LOCK``, server-wide, released with the
session if a replica dies holding it) makes them take turns, and each step checks
the current state before acting, so the second replica finds nothing left to do.

``ensure_fulltext`` builds ``ft_search_text`` over ``memory.search_text`` (the
folded, stemmed terms of ``store.search.text``) with InnoDB's stopword list switched
off: the list (``about``, ``com``, ``www``, ``will``, ...) is bound to an index when
it is built, and words on it would then never match. It drops ``ft_content``, the
index over raw ``content`` that came before: a second FULLTEXT index would cost every
write and serve no query. The server-wide minimum token size
(``innodb_ft_min_token_size``, 3 by default) cannot be changed here;
``store.search.backends.mysql`` handles the shorter words without the index.

The index is always built with the table rebuilt (``FORCE``). The first FULLTEXT index
of a table rebuilds it anyway, to add InnoDB's hidden ``FTS_DOC_ID`` column; a later one
(a healed index, or ``ft_search_text`` after ``ft_content``) would otherwise be added in
place over the column left behind, and MariaDB 10.11 then numbers new rows' documents
from the highest ``FTS_DOC_ID`` still in the table: if the newest rows had been deleted,
the rows saved next reuse their numbers and never match,
with no error (seen: heal an emptied table, save eight rows, ``MATCH`` finds five).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy.engine import Connection

#: How long a starting replica waits for another one's migrations before giving up.
LOCK_TIMEOUT_SECONDS = 120

FULLTEXT_INDEX = "ft_search_text"
#: The index over raw ``content`` that ``ft_search_text`` replaces.
LEGACY_INDEX = "ft_content"

# Lock names are server-wide (and at most 64 characters): qualify by database so
# that two databases on one server do not wait for each other.
_LOCK_NAME = sa.func.left(sa.func.concat("memory_bank.schema:", sa.func.database()), 64)


@contextmanager
def advisory_lock(connection: Connection, timeout: int = LOCK_TIMEOUT_SECONDS) -> Iterator[None]:
    """Hold this database's schema lock; re-entrant within one connection."""
    acquired = connection.execute(sa.select(sa.func.get_lock(_LOCK_NAME, timeout))).scalar()
    if acquired != 1:
        raise TimeoutError(f"another process held the schema lock for over {timeout}s (still migrating, or stuck?)")
    try:
        yield
    finally:
        connection.execute(sa.select(sa.func.release_lock(_LOCK_NAME)))


def has_fulltext(connection: Connection, name: str = FULLTEXT_INDEX) -> bool:
    statement = sa.text(
        "SELECT 1 FROM information_schema.statistics"
        " WHERE table_schema = DATABASE() AND table_name = 'memory' AND index_name = :name"
    )
    return connection.execute(statement, {"name": name}).first() is not None


def ensure_fulltext(connection: Connection) -> bool:
    """Create ``ft_search_text`` unless present; True when it was created. Hold ``advisory_lock``."""
    if has_fulltext(connection, LEGACY_INDEX):
        connection.exec_driver_sql(f"ALTER TABLE memory DROP INDEX {LEGACY_INDEX}")
    if has_fulltext(connection):
        return False
    previous = connection.exec_driver_sql("SELECT @@SESSION.innodb_ft_enable_stopword").scalar_one()
    connection.exec_driver_sql("SET SESSION innodb_ft_enable_stopword = OFF")
    try:
        # FORCE: a rebuilt table numbers its documents afresh (the module docstring says why).
        connection.exec_driver_sql(f"ALTER TABLE memory ADD FULLTEXT INDEX {FULLTEXT_INDEX} (search_text), FORCE")
    finally:
        connection.exec_driver_sql(f"SET SESSION innodb_ft_enable_stopword = {int(previous)}")
    return True
