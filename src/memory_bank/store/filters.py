"""SQL predicates for who may see a memory and which memories a query asks for.

Owner scoping lives in the SQL of every query, never in Python after the fact, so a
forgotten check cannot leak a row: ``visible_to`` is the only definition of access.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy import ColumnElement
from sqlalchemy.orm import Mapped, aliased
from sqlmodel import col

from memory_bank.security.principal import Principal
from memory_bank.store.search.backend import SearchBackend
from memory_bank.store.tables import MemoryRow
from memory_bank.store.tags import tag_set


def visible_to(principal: Principal) -> ColumnElement[bool]:
    """Same organisation, and either shared with it or saved by this user."""
    return sa.and_(
        col(MemoryRow.org_id) == principal.org_id,
        sa.or_(col(MemoryRow.scope) == "org", col(MemoryRow.user_id) == principal.user_id),
    )


def owned_by(principal: Principal) -> ColumnElement[bool]:
    """Saved by this user in this organisation: what export hands out and import writes."""
    return sa.and_(col(MemoryRow.org_id) == principal.org_id, col(MemoryRow.user_id) == principal.user_id)


def current() -> ColumnElement[bool]:
    """The live head of a chain. A tombstone is always its chain's head, so this suffices."""
    return sa.and_(col(MemoryRow.superseded_at).is_(None), col(MemoryRow.deleted_at).is_(None))


def not_deleted() -> ColumnElement[bool]:
    """Any version of a chain that has no deletion tombstone."""
    tombstone = aliased(MemoryRow)
    return ~sa.exists().where(col(tombstone.chain_id) == col(MemoryRow.chain_id), col(tombstone.deleted_at).is_not(None))


def exactly(column: Mapped[str | None], value: str) -> ColumnElement[bool]:
    """``column == value`` with the same answer on every backend.

    MariaDB compares VARCHARs with PAD SPACE, even under ``utf8mb4_bin``: ``'p ' = 'p'``
    is true there and false on SQLite, so a filter on ``p`` would also return project
    ``p `` on one backend only. ``LIKE`` never pads; with the wildcards escaped it is an
    exact comparison, and the ``=`` beside it keeps the index usable.
    """
    pattern = value.replace("/", "//").replace("%", "/%").replace("_", "/_")
    return sa.and_(column == value, column.like(pattern, escape="/"))


def starts_with(column: Mapped[str | None], prefix: str) -> ColumnElement[bool]:
    """``column`` begins with ``prefix``, case and all, on every backend.

    SQLite's ``LIKE`` ignores ASCII case (``A`` found ``a.b``), so the first characters are
    also compared; MariaDB's ``=`` pads with spaces, which the ``LIKE`` beside it does not.
    """
    return sa.and_(column.startswith(prefix, autoescape=True), sa.func.substr(column, 1, len(prefix)) == prefix)


@dataclass(frozen=True)
class MemoryFilter:
    """The narrowing shared by list and search (spec parameters of the same names)."""

    tags: tuple[str, ...] = ()
    category: str | None = None
    project_id: str | None = None
    keypath_prefix: str | None = None
    include_superseded: bool = False

    @property
    def narrows(self) -> bool:
        """Whether it admits fewer rows, or others, than the reader's live memories."""
        return bool(self.tags) or self.include_superseded or any(
            value is not None for value in (self.category, self.project_id, self.keypath_prefix)
        )

    def clauses(self, principal: Principal, search: SearchBackend) -> list[ColumnElement[bool]]:
        where = [visible_to(principal), not_deleted() if self.include_superseded else current()]
        where += [search.has_tag(tag) for tag in tag_set(self.tags)]
        if self.category is not None:
            where.append(col(MemoryRow.category) == self.category)
        if self.project_id is not None:
            where.append(exactly(col(MemoryRow.project_id), self.project_id))
        if self.keypath_prefix is not None:
            where.append(starts_with(col(MemoryRow.keypath), self.keypath_prefix))
        return where
