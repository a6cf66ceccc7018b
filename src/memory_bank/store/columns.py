"""Column types that behave the same on SQLite and MySQL/MariaDB.

Declared once here so that tables never carry dialect conditionals: the MySQL
variants matter the day the same tables are created there (DESIGN §5).
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

ID_LENGTH = 21
_ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
#: Every letter but ``-``, which a command line would read as the start of an option.
ID_FIRST_LETTERS = _ID_ALPHABET.replace("-", "")

#: Ids are case-sensitive random strings: MySQL's default case-insensitive collation
#: would let two distinct ids collide, hence the binary ASCII collation there.
IdType = sa.CHAR(ID_LENGTH).with_variant(
    mysql.CHAR(ID_LENGTH, charset="ascii", collation="ascii_bin"), "mysql", "mariadb"
)

#: SQLite only makes ``INTEGER PRIMARY KEY`` an alias of the rowid (stable across
#: VACUUM, which the FTS5 external-content index relies on); MySQL wants BIGINT.
SurrogateKey = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


#: ``memory.search_text`` (store.search.text): content, tags and snippets together can pass TEXT's
#: 64 KB on MySQL; the table's binary collation suits text that is folded already.
SearchTextType = sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")


def new_id() -> str:
    """A 21-character URL-safe random id (about 126 bits), as the spec's ``MemoryId`` pattern wants.

    It never begins with ``-``: a command line would read such an id as an option
    (``memory-bank token revoke -x...``), so the first letter is drawn from the other 63.
    The rest is one read of the OS's randomness, six bits of each byte (the alphabet has
    64 letters, so ``byte & 63`` is uniform), rather than ``secrets.choice`` per letter."""
    rest = "".join(_ID_ALPHABET[byte & 63] for byte in secrets.token_bytes(ID_LENGTH - 1))
    return secrets.choice(ID_FIRST_LETTERS) + rest


def command_line_safe(candidate: str) -> str:
    """``candidate`` with a leading ``-`` turned into ``_``, for ids derived from a digest
    rather than drawn by ``new_id`` (a leading ``-`` would read as an option)."""
    return "_" + candidate[1:] if candidate.startswith("-") else candidate


def utcnow() -> datetime:
    return datetime.now(UTC)


def empty_list() -> list[Any]:
    """A fresh ``[]``, as a default factory: pydantic inspects a factory's signature each time it
    uses it, which for the builtin ``list`` means parsing its text signature (46 us against 4 us
    for this function; two such fields made a fifth of the time of saving a memory)."""
    return []


class UTCDateTime(sa.TypeDecorator[datetime]):
    """Stores naive UTC with microseconds, hands back aware UTC datetimes.

    SQLite drops time zones and MySQL's DATETIME drops fractions unless asked for
    them; normalising at the column keeps ordering by time exact on both.
    """

    impl = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:  # e.g. an imported record without a zone: read as UTC
            return value
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        return None if value is None else value.replace(tzinfo=UTC)
