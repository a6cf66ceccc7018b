"""Keyset paging on (created_at, id): stable under concurrent inserts, no OFFSET scans.

List pages newest first and export streams oldest first over the same key; the
cursor handed to clients is that key, base64url-encoded so it stays opaque.
"""

from __future__ import annotations

import base64
import binascii
import json
import operator
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import ColumnElement
from sqlmodel import col

from memory_bank.errors import ApiError, ErrorCode, FieldError
from memory_bank.store.tables import MemoryRow

Key = tuple[datetime, str]


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
    """The key inside a cursor; a cursor we did not issue is the caller's mistake (422)."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created_at, memory_id = json.loads(raw)
        key = datetime.fromisoformat(created_at), str(memory_id)
        if key[0].tzinfo is None:
            raise ValueError("cursor time has no zone")
        return key
    except (binascii.Error, ValueError, TypeError) as exc:
        raise ApiError(
            ErrorCode.invalid_params,
            "cursor is not one this server issued",
            [FieldError("/query/cursor", "format", "pass a next_cursor value unchanged")],
        ) from exc
