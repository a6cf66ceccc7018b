"""Column types and table options shared by the revisions, frozen.

Revisions spell their types out here instead of importing ``store.columns``: a
revision must keep creating the schema it was written for after the models move on.
So nothing here may change meaning; a revision that needs another type adds a
new helper.

On MySQL/MariaDB every table defaults to ``utf8mb4_bin``: ids, org/user ids,
keypaths and idempotency keys then compare byte for byte, as they do on SQLite; a
case-insensitive default would make org ``Acme`` and org ``acme`` one tenant.
``content`` alone is case- and accent-insensitive (``search_text``), because its
FULLTEXT index matches words by that collation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

MYSQL_TABLE: dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}


def _on_mysql(generic: sa.types.TypeEngine[Any], variant: sa.types.TypeEngine[Any]) -> sa.types.TypeEngine[Any]:
    return generic.with_variant(variant, "mysql", "mariadb")


def id_type() -> sa.types.TypeEngine[Any]:
    return _on_mysql(sa.CHAR(21), mysql.CHAR(21, charset="ascii", collation="ascii_bin"))


def moment() -> sa.types.TypeEngine[Any]:
    return _on_mysql(sa.DateTime(), mysql.DATETIME(fsp=6))


def search_text() -> sa.types.TypeEngine[Any]:
    return _on_mysql(sa.Text(), mysql.TEXT(collation="utf8mb4_unicode_ci"))


def long_text() -> sa.types.TypeEngine[Any]:
    """Text that may pass TEXT's 64 KB on MySQL (MEDIUMTEXT), in the table's collation."""
    return _on_mysql(sa.Text(), mysql.MEDIUMTEXT())


def surrogate_key() -> sa.Column[Any]:
    return sa.Column("pk", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True)


#: The characters the spec's ``Content`` and ``Tag`` pattern counted as blank when revision
#: 0007 was written (controls, format characters, separators, blank fillers, reserved
#: default ignorables), as the body of a regex character class.
BLANK_TAG_CHARACTERS = (
    "\\x00-\\x20\\x7f-\\xa0\\xad\\u034f\\u0600-\\u0605\\u061c\\u06dd\\u070f\\u0890\\u0891\\u08e2\\u115f\\u1160\\u1680"
    "\\u17b4\\u17b5\\u180b-\\u180f\\u2000-\\u200f\\u2028-\\u202f\\u205f-\\u206f\\u2800\\u3000\\u3164\\ufe00-\\ufe0f\\ufeff"
    "\\uffa0\\ufff0-\\ufffb\U000110BD\U000110CD\U00013430-\U0001343F\U0001BCA0-\U0001BCA3\U0001D173-\U0001D17A"
    "\U000E0000-\U000E0FFF"
)


#: Rows read and rewritten per round trip by :func:`clear_search_text` and :func:`rewrite_tags`.
_BATCH = 1000
#: The columns of ``memory`` that they read and write.
_MEMORY = sa.table(
    "memory",
    sa.column("pk", sa.BigInteger()),
    sa.column("content", sa.Text()),
    sa.column("tags", sa.JSON()),
    sa.column("contexts", sa.JSON()),
    sa.column("search_text"),
)


def _memory_rows(connection: sa.Connection, *columns: sa.ColumnElement[Any]) -> Iterator[Sequence[Any]]:
    """Every memory row's ``pk`` and ``columns``, :data:`_BATCH` rows at a time in ``pk`` order."""
    after = 0
    while rows := connection.execute(sa.select(_MEMORY.c.pk, *columns).where(_MEMORY.c.pk > after).order_by(_MEMORY.c.pk).limit(_BATCH)).all():
        yield rows
        after = rows[-1][0]


def clear_search_text(stale: Callable[[list[Any]], bool]) -> None:
    """Clear the search text of every memory row whose ``[content, tags, contexts]`` is
    ``stale``, in batches; the start-up backfill writes it anew (and tells replicas)."""
    connection = op.get_bind()
    for rows in _memory_rows(connection, _MEMORY.c.content, _MEMORY.c.tags, _MEMORY.c.contexts):
        cleared = [{"row_pk": pk} for pk, *searched in rows if stale(searched)]
        if cleared:
            connection.execute(_MEMORY.update().where(_MEMORY.c.pk == sa.bindparam("row_pk")).values(search_text=None), cleared)


def rewrite_tags(rewritten: Callable[[list[Any]], list[Any]]) -> None:
    """Give every memory row whose tags (a list) ``rewritten`` changes those tags, in batches, and
    clear its search text; the start-up backfill writes it anew. Its vector stays."""
    connection = op.get_bind()
    for rows in _memory_rows(connection, _MEMORY.c.tags):
        changed = [{"row_pk": pk, "kept": kept} for pk, tags in rows if isinstance(tags, list) and (kept := rewritten(tags)) != tags]
        if changed:
            connection.execute(
                _MEMORY.update()
                .where(_MEMORY.c.pk == sa.bindparam("row_pk"))
                .values(tags=sa.bindparam("kept", type_=sa.JSON()), search_text=None),
                changed,
            )
