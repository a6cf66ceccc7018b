"""Keyset paging on (created_at, id): stable under concurrent inserts, no OFFSET scans.

List pages newest first and export streams oldest first over the same key; the
cursor handed to clients is that key, base64url-encoded so it stays opaque.
"""

from __future__ import annotations

import base64
import binascii
import json
import operator
from datetime import UTC, datetime
from typing import Annotated, Any

import sqlalchemy as sa
from pydantic import AwareDatetime, StringConstraints, TypeAdapter
from sqlalchemy import ColumnElement
from sqlmodel import col

from memory_bank.errors import FieldError, InvalidInput
from memory_bank.store.columns import ID_LENGTH
from memory_bank.store.tables import MemoryRow

Key = tuple[datetime, str]

#: What a cursor must hold to name a position: a zoned time and a memory id. Strict, so
#: a number is not read as a timestamp; the id pattern keeps text no id can have (a lone
#: surrogate, a quote) away from the database.
_POSITION: TypeAdapter[tuple[datetime, str]] = TypeAdapter(
    tuple[AwareDatetime, Annotated[str, StringConstraints(pattern=f"^[A-Za-z0-9_-]{{{ID_LENGTH}}}$")]]
)


def key_of(row: MemoryRow) -> Key:
    return (row.created_at, row.id)


def order(descending: bool) -> tuple[ColumnElement[Any], ...]:
    columns = (col(MemoryRow.created_at), col(MemoryRow.id))
    return tuple(c.desc() if descending else c.asc() for c in columns)


def beyond(key: Key, descending: bool) -> ColumnElement[bool]:
    """Rows strictly after ``key`` in the given direction."""
    created_at, memory_id = key
    past = operator.lt if descending else operator.gt
    return sa.or_(
        past(col(MemoryRow.created_at), created_at),
        sa.and_(col(MemoryRow.created_at) == created_at, past(col(MemoryRow.id), memory_id)),
    )


def encode_cursor(key: Key) -> str:
    raw = json.dumps([key[0].isoformat(), key[1]], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> Key:
    """The key inside a cursor, in UTC; one that names no position is the caller's mistake (``InvalidInput`` at ``cursor``).

    Every way a string can fail lands here, including a time that exists in its own
    zone but not in UTC (year 1 at +05:00, year 9999 at -05:00): the columns compare
    in UTC, so such a cursor names no position either.
    """
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created_at, memory_id = _POSITION.validate_json(raw, strict=True)
        return created_at.astimezone(UTC), memory_id
    except (binascii.Error, ValueError, OverflowError) as exc:
        raise InvalidInput(
            "cursor is not one this server issued",
            [FieldError("cursor", "format", "pass a next_cursor value unchanged")],
        ) from exc
