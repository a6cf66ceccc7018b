"""Keyset paging on (created_at, id): stable under concurrent inserts, no OFFSET scans.

The memory list pages newest first and export streams oldest first over the same key;
the admin lists page tokens and agents oldest first over theirs. The cursor handed to
clients is that key, base64url-encoded so it stays opaque: a row inserted while a
client pages never makes another row appear twice or go missing.
"""

from __future__ import annotations

import base64
import binascii
import json
import operator
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, Protocol, TypeVar

import sqlalchemy as sa
from pydantic import AwareDatetime, TypeAdapter
from sqlalchemy import ColumnElement
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Mapped
from sqlmodel import col

from memory_bank.errors import FieldError, InvalidInput
from memory_bank.owner_ids import MAX_OWNER_ID_LENGTH
from memory_bank.store.columns import ID_LENGTH
from memory_bank.store.database import transaction
from memory_bank.store.tables import AgentRow, MemoryRow, TokenRow

Key = tuple[datetime, str]

#: What a cursor must hold to name a position: a zoned time and an id. Strict, so a
#: number is not read as a timestamp.
_POSITION: TypeAdapter[tuple[datetime, str]] = TypeAdapter(tuple[AwareDatetime, str])

#: The ids this server generates (memories, tokens).
_GENERATED_ID = re.compile(f"[A-Za-z0-9_-]{{{ID_LENGTH}}}")


class Keyed(Protocol):
    @property
    def created_at(self) -> datetime: ...

    @property
    def id(self) -> str: ...


Row = TypeVar("Row", bound=Keyed)
Item = TypeVar("Item")


def generated_id(value: str) -> None:
    """A generated id, or ``ValueError``: keeps text no id can have (a lone surrogate, a quote) away from the database."""
    if not _GENERATED_ID.fullmatch(value):  # not match: "$" would let a trailing newline through
        raise ValueError("not a generated id")


def stored_owner_id(value: str) -> None:
    """Any id an agent row can hold, including ones minted before today's id rules.

    Only what the column cannot hold is refused (empty, over 128 characters, a lone
    surrogate): a cursor naming an agent made under older rules must still page past it.
    """
    if not 0 < len(value) <= MAX_OWNER_ID_LENGTH:
        raise ValueError("not an id length")
    value.encode("utf-8")  # UnicodeEncodeError (a ValueError) on a lone surrogate


@dataclass(frozen=True)
class Keyset(Generic[Row]):
    """One table's paging key: its ``created_at`` and ``id`` columns, and what a cursor's id may be."""

    created_at: Mapped[datetime]
    id: Mapped[str]
    check_id: Callable[[str], None]

    def key_of(self, row: Row) -> Key:
        return (row.created_at, row.id)

    def order(self, descending: bool) -> tuple[ColumnElement[Any], ...]:
        columns = (self.created_at, self.id)
        return tuple(c.desc() if descending else c.asc() for c in columns)

    def beyond(self, key: Key, descending: bool) -> ColumnElement[bool]:
        """Rows strictly after ``key`` in the given direction."""
        created_at, row_id = key
        past = operator.lt if descending else operator.gt
        return sa.or_(
            past(self.created_at, created_at),
            sa.and_(self.created_at == created_at, past(self.id, row_id)),
        )

    def page(
        self, engine: Engine, statement: sa.Select[Row], limit: int, cursor: str | None, *, descending: bool
    ) -> tuple[list[Row], str | None]:
        """One page of ``statement`` after ``cursor`` and the cursor of the next page (None on the last)."""
        if cursor is not None:
            statement = statement.where(self.beyond(self.decode(cursor), descending))
        statement = statement.order_by(*self.order(descending)).limit(limit + 1)
        with transaction(engine) as session:
            rows = list(session.scalars(statement))
        more = len(rows) > limit
        return rows[:limit], self.encode(self.key_of(rows[limit - 1])) if more else None

    @staticmethod
    def encode(key: Key) -> str:
        raw = json.dumps([key[0].isoformat(), key[1]], separators=(",", ":"), ensure_ascii=False)
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    def decode(self, cursor: str) -> Key:
        """The key inside a cursor, in UTC; one that names no position is the caller's mistake (``InvalidInput`` at ``cursor``).

        Every way a string can fail lands here, including a time that exists in its own
        zone but not in UTC (year 1 at +05:00, year 9999 at -05:00): the columns compare
        in UTC, so such a cursor names no position either.
        """
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
            created_at, row_id = _POSITION.validate_json(raw, strict=True)
            self.check_id(row_id)
            return created_at.astimezone(UTC), row_id
        except (binascii.Error, ValueError, OverflowError) as exc:
            raise InvalidInput(
                "cursor is not one this server issued",
                [FieldError("cursor", "format", "pass a next_cursor value unchanged")],
            ) from exc


class Pages(Protocol[Item]):
    """A paged list: one page after ``cursor`` and the cursor of the next (a store's ``page`` with its filters bound)."""

    def __call__(self, *, cursor: str | None) -> tuple[list[Item], str | None]: ...


def every_page(fetch: Pages[Item]) -> Iterator[Item]:
    """Every item of a paged list, following each page's cursor to the next (the CLI lists this way)."""
    cursor: str | None = None
    while True:
        items, cursor = fetch(cursor=cursor)
        yield from items
        if cursor is None:
            return


MEMORIES: Keyset[MemoryRow] = Keyset(col(MemoryRow.created_at), col(MemoryRow.id), generated_id)
TOKENS: Keyset[TokenRow] = Keyset(col(TokenRow.created_at), col(TokenRow.id), generated_id)
AGENTS: Keyset[AgentRow] = Keyset(col(AgentRow.created_at), col(AgentRow.id), stored_owner_id)
