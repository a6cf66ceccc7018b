"""Writing exported memory records into the caller's account, all or nothing.

Records are what ``export`` wrote (the Memory shape), already validated one by one
by the caller. This module checks what only the whole file can show (duplicate ids,
``supersedes_id`` links that lead nowhere, forks and cycles), then writes:

* a record whose id the caller already owns is skipped, so an import can be repeated;
* a record whose id another owner holds gets an id derived from (owner, original id),
  and the links to it follow; derived rather than random, so importing the same file
  into the same account again finds those copies and skips them instead of duplicating;
* ``chain_id`` is re-derived from the links (the chain's first version), so the
  export format needs no field beyond the Memory shape;
* the first version of each live chain gets its content-derived idempotency key back
  when no other memory holds it, so saving the same words after an import is still a
  replay. Keys from ``Idempotency-Key`` headers do not travel.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Session, col

from memory_bank.errors import ApiError, ErrorCode, FieldError
from memory_bank.security.principal import Principal
from memory_bank.store.columns import ID_LENGTH, command_line_safe, new_id
from memory_bank.store.idempotency import content_hash, content_key
from memory_bank.store.tables import MemoryRow

#: Ids per IN (...) probe: well under every backend's bound-parameter limit.
_CHUNK = 500


@dataclass(frozen=True)
class Record:
    """One exported memory and the line it came from (1-based), for error messages."""

    line: int
    fields: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.fields["id"])

    @property
    def parent(self) -> str | None:
        return self.fields.get("supersedes_id")


def copy_id(principal: Principal, original_id: str) -> str:
    """The id this owner's copy of another owner's record gets: stable, URL-safe, 21 characters."""
    digest = hashlib.sha256(f"{principal.org_id}:{principal.user_id}:{original_id}".encode()).digest()
    return command_line_safe(base64.urlsafe_b64encode(digest).decode("ascii")[:ID_LENGTH])


def line_error(line: int, rule: str, message: str) -> FieldError:
    return FieldError(f"/body/line/{line}", rule, message)


def invalid_lines(errors: list[FieldError]) -> ApiError:
    return ApiError(
        ErrorCode.invalid_params, f"{len(errors)} line(s) are invalid; nothing was imported", errors
    )


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def _rows_by_id(session: Session, ids: set[str]) -> dict[str, MemoryRow]:
    """Existing rows with these ids, whoever owns them (only to tell taken ids apart)."""
    found: dict[str, MemoryRow] = {}
    for chunk in _chunks(sorted(ids)):
        found.update((row.id, row) for row in session.scalars(sa.select(MemoryRow).where(col(MemoryRow.id).in_(chunk))))
    return found


def _taken_keys(session: Session, org_id: str, keys: set[str]) -> set[str]:
    taken: set[str] = set()
    for chunk in _chunks(sorted(keys)):
        statement = sa.select(col(MemoryRow.idempotency_key)).where(
            col(MemoryRow.org_id) == org_id, col(MemoryRow.idempotency_key).in_(chunk)
        )
        taken.update(session.scalars(statement))
    return taken


def _depths(by_id: dict[str, Record]) -> tuple[dict[str, int], list[FieldError]]:
    """Each record's distance from the first in-file version of its chain, and the cycles.

    Writing in order of depth puts every version after the one it supersedes.
    """
    depth: dict[str, int] = {}
    errors: list[FieldError] = []
    for record in by_id.values():
        path: list[str] = []
        seen: set[str] = set()
        node: Record | None = record
        while node is not None and node.id not in depth and node.id not in seen:
            path.append(node.id)
            seen.add(node.id)
            node = by_id.get(node.parent) if node.parent else None
        if node is not None and node.id not in depth:
            errors.append(line_error(record.line, "cycle", "its supersedes_id links form a cycle"))
            continue
        base = depth[node.id] + 1 if node is not None else 0
        depth.update((memory_id, base + i) for i, memory_id in enumerate(reversed(path)))
    return depth, errors


def _check(records: Sequence[Record], owned: set[str]) -> tuple[list[Record], list[FieldError]]:
    """The records in writing order, or every line whose links are broken."""
    in_file = {r.id for r in records}
    by_id: dict[str, Record] = {}
    superseded_by: dict[str, int] = {}
    errors: list[FieldError] = []
    for record in records:
        if record.id in by_id:
            errors.append(line_error(record.line, "unique", f"id {record.id} is also on line {by_id[record.id].line}"))
            continue
        by_id[record.id] = record
        if record.parent is None:
            continue
        if record.parent in superseded_by:
            errors.append(line_error(record.line, "fork", f"line {superseded_by[record.parent]} also supersedes {record.parent}"))
        superseded_by[record.parent] = record.line
        if record.parent not in in_file and record.parent not in owned:
            errors.append(line_error(record.line, "link", f"supersedes_id {record.parent} is neither in this file nor one of your memories"))
    depth, cycles = _depths(by_id) if not errors else ({}, [])
    errors += cycles
    errors.sort(key=lambda e: int(e.field.rsplit("/", 1)[1]))
    return sorted(by_id.values(), key=lambda r: depth.get(r.id, 0)), errors


def _mine(row: MemoryRow, principal: Principal) -> bool:
    return row.org_id == principal.org_id and row.user_id == principal.user_id


def _own_ids(session: Session, principal: Principal, records: Sequence[Record]) -> list[Record]:
    """The records with every id another owner holds replaced by this owner's ``copy_id``."""
    ids = {r.id for r in records} | {r.parent for r in records if r.parent}
    rename = {i: copy_id(principal, i) for i, row in _rows_by_id(session, ids).items() if not _mine(row, principal)}
    return [
        replace(r, fields=r.fields | {"id": rename.get(r.id, r.id), "supersedes_id": rename.get(r.parent, r.parent) if r.parent else None})
        if r.id in rename or r.parent in rename
        else r
        for r in records
    ]


def write(session: Session, principal: Principal, records: Sequence[Record]) -> tuple[int, int]:
    """Insert the records the caller does not have yet; returns (imported, skipped)."""
    records = _own_ids(session, principal, records)
    existing = _rows_by_id(session, {r.id for r in records} | {r.parent for r in records if r.parent})
    owned = {memory_id for memory_id, row in existing.items() if _mine(row, principal)}
    ordered, errors = _check(records, owned)
    if errors:
        raise invalid_lines(errors)

    final_id: dict[str, str] = {}
    chain_of: dict[str, str] = {}
    new_rows: list[MemoryRow] = []
    for record in ordered:
        if record.id in owned:
            final_id[record.id] = record.id
            chain_of[record.id] = existing[record.id].chain_id
            continue
        memory_id = new_id() if record.id in existing else record.id
        final_id[record.id] = memory_id
        parent = record.parent
        if parent is None:
            chain_of[record.id] = memory_id
        else:
            chain_of[record.id] = chain_of[parent] if parent in chain_of else existing[parent].chain_id
            if parent in owned:
                _retire(existing[parent], record.fields["created_at"])
        fields = {k: v for k, v in record.fields.items() if k not in ("id", "user_id", "supersedes_id")}
        new_rows.append(
            MemoryRow(
                **fields,
                id=memory_id,
                org_id=principal.org_id,
                user_id=principal.user_id,
                supersedes_id=final_id.get(parent, parent) if parent else None,
                chain_id=chain_of[record.id],
                content_hash=content_hash(fields["content"]),
            )
        )
    _restore_content_keys(session, principal, new_rows)
    session.add_all(new_rows)
    session.flush()
    return len(new_rows), len(ordered) - len(new_rows)


def _retire(head: MemoryRow, moment: datetime) -> None:
    """A stored version that an imported one supersedes is a chain head no longer."""
    if head.superseded_at is None:
        head.superseded_at = head.updated_at = moment


def _restore_content_keys(session: Session, principal: Principal, rows: Sequence[MemoryRow]) -> None:
    """Give each live chain's first version the content key a save would have given it."""
    tombstoned = {row.chain_id for row in rows if row.deleted_at is not None}
    wanted = {
        row.id: content_key(principal.org_id, principal.user_id, row.agent_id, row.content)
        for row in rows
        if row.supersedes_id is None and row.chain_id not in tombstoned
    }
    taken = _taken_keys(session, principal.org_id, set(wanted.values()))
    for row in rows:
        key = wanted.get(row.id)
        if key is not None and key not in taken:
            row.idempotency_key = key
            taken.add(key)
