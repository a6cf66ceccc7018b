"""Which memory rows each write transaction changed, numbered per org in commit order.

Every search replica keeps postings of the owners it serves (``postings``); before a search
it compares its revision of the owner's org with ``memory_revision`` and reads only the
rows named by the changes in between. So a write on any replica is seen by the next
search on every other, and a search never rereads an owner to find what changed.

Writers name the rows they insert or stamp (:func:`touch`); ``store.database.transaction``
calls :func:`write` as the last step before COMMIT: one upsert of the org's revision row
(its row lock, held until COMMIT, makes the org's writers take revisions in commit order:
a reader that sees revision ``r`` has every change up to ``r``) and one change row. Texts
never change after insert, and a stamp only ever ends a row's life, so a changed row's
current state is all a replica needs to apply the change, however late it reads it.

The log keeps the last ``KEPT`` changes of each org (older ones are pruned every
``PRUNE_EVERY`` revisions); a replica further behind reloads the owner whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql, sqlite
from sqlalchemy.engine import Connection
from sqlmodel import Session, col

from memory_bank.store.tables import MemoryChangeRow, MemoryRevisionRow

__all__ = ["KEPT", "current", "record", "since", "touch", "write"]

#: Changes kept per org: a replica more than this many write transactions behind reloads.
KEPT = 4096
#: Revisions between two prunes of an org's log.
PRUNE_EVERY = 256

_TOUCHED = "memory_bank.touched"


def touch(session: Session, org_id: str, pks: Iterable[int | None]) -> None:
    """Note that this transaction inserted or stamped the memory rows ``pks`` of ``org_id``."""
    touched: dict[str, set[int]] = session.info.setdefault(_TOUCHED, {})
    touched.setdefault(org_id, set()).update(pk for pk in pks if pk is not None)


def write(session: Session) -> None:
    """Number the changes :func:`touch` noted in this transaction; run last before COMMIT."""
    record(session, session.get_bind().dialect.name, session.info.pop(_TOUCHED, {}))


def record(executor: Session | Connection, dialect: str, touched: Mapping[str, Iterable[int]]) -> None:
    """Number the changes to the rows ``touched`` (org -> pks), org by org in a fixed order
    (no two writers lock two orgs' rows in opposite orders), in ``executor``'s transaction."""
    for org_id in sorted(touched):
        revision = _bump(executor, dialect, org_id)
        pks = " ".join(map(str, sorted(touched[org_id])))
        executor.execute(sa.insert(MemoryChangeRow).values(org_id=org_id, revision=revision, pks=pks))
        if revision % PRUNE_EVERY == 0:
            executor.execute(
                sa.delete(MemoryChangeRow).where(
                    col(MemoryChangeRow.org_id) == org_id, col(MemoryChangeRow.revision) <= revision - KEPT
                )
            )


def _bump(executor: Session | Connection, dialect: str, org_id: str) -> int:
    """The org's next revision, taken in one statement (it is on every save's path)."""
    table: sa.Table = MemoryRevisionRow.__table__  # type: ignore[attr-defined]
    if dialect == "sqlite":
        upsert = sqlite.insert(table).values(org_id=org_id, revision=1)
        returning = upsert.on_conflict_do_update(index_elements=["org_id"], set_={"revision": table.c.revision + 1})
        return int(executor.execute(returning.returning(table.c.revision)).scalar_one())
    # MariaDB has no RETURNING on an upsert; LAST_INSERT_ID(x) hands x back as the statement's
    # insert id. A first insert has none (0: the table has no auto-increment): revision 1.
    bump = mysql.insert(table).values(org_id=org_id, revision=1)
    bump = bump.on_duplicate_key_update(revision=sa.func.last_insert_id(table.c.revision + 1))
    result: sa.CursorResult[Any] = executor.execute(bump)  # type: ignore[assignment]
    return int(result.lastrowid or 1)


def current(session: Session | Connection, org_id: str) -> int:
    """The org's revision (0 before its first change)."""
    found = session.execute(
        sa.select(col(MemoryRevisionRow.revision)).where(col(MemoryRevisionRow.org_id) == org_id)
    ).scalar_one_or_none()
    return int(found or 0)


def since(session: Session, org_id: str, after: int, upto: int) -> set[int] | None:
    """The rows changed by the org's revisions ``after + 1 .. upto``, or None when some of
    those changes were pruned (the caller reloads)."""
    rows = session.execute(
        sa.select(col(MemoryChangeRow.pks)).where(
            col(MemoryChangeRow.org_id) == org_id,
            col(MemoryChangeRow.revision) > after,
            col(MemoryChangeRow.revision) <= upto,
        )
    ).all()
    if len(rows) != upto - after:
        return None
    return {int(pk) for (pks,) in rows for pk in pks.split()}
