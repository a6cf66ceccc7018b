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

from typing import Any

import sqlalchemy as sa
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
