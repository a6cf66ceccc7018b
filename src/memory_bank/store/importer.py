"""Writing exported memory records into the caller's account.

Records are what ``export`` wrote (the Memory shape), already validated one by one
by the caller. ``plan`` checks what only the whole file together with the caller's
stored memories can show, and refuses the import, naming each line, unless every
version chain stays well formed: one head per chain (a tombstone is a deleted head),
versions counting up from 1, no version superseded twice, no link to a deleted or
unknown memory, no cycle, and one current value per keypath.

Ids:

* a record whose id the caller already owns is skipped, so an import can be repeated;
  except a tombstone of a memory still current here: a newer export says it was deleted
  since, so the import deletes it as ``DELETE`` would (an older export, without the
  tombstone, never brings a deleted memory back);
* every other id, whether unknown or held by someone else, becomes an id derived from
  (owner, original id), and the links to it follow. The same rule for both, so an
  import tells nothing about other accounts; derived rather than random, so importing
  the same file into the same account again finds those copies and skips them;
* ``chain_id`` is re-derived from the links (the chain's first version), so the
  export format needs no field beyond the Memory shape;
* the first version of each live chain gets its content-derived idempotency key back
  when no other memory holds it, so saving the same words after an import is still a
  replay. Keys from ``Idempotency-Key`` headers do not travel.

The plan is written in batches of whole chains, each batch its own transaction
(``write_batch``), so a large import never holds the database's write lock for long
and other writers go in between. After every committed batch each chain is whole.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import ColumnElement
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col

from memory_bank.errors import Conflict, FieldError, InvalidInput
from memory_bank.security.principal import Principal
from memory_bank.store.columns import ID_LENGTH, UTCDateTime, command_line_safe, utcnow
from memory_bank.store.contention import DatabaseBusy
from memory_bank.store.database import transaction
from memory_bank.store.fence import writing_as
from memory_bank.store.filters import current, owned_by
from memory_bank.store.idempotency import (
    CONTENT_KEY_PREFIX,
    content_hash,
    content_key,
    release_content_keys,
    release_every_key,
)
from memory_bank.store.search import changes
from memory_bank.store.search.indexing import EMBEDDER_OPTION, derive
from memory_bank.store.tables import MemoryRow
from memory_bank.textsearch.embeddings import Embedder

T = TypeVar("T")

#: Ids per IN (...) probe: well under every backend's bound-parameter limit.
_CHUNK = 500
#: Rows per write transaction (a longer chain makes its batch longer: chains are never split).
BATCH_ROWS = 200
#: Tries per batch when a concurrent writer got in first; the retry finds its rows and skips them.
BATCH_ATTEMPTS = 3
#: Problem documents list at most this many bad lines (the detail gives the total).
MAX_REPORTED_ERRORS = 100


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


@dataclass
class Planned:
    """A record to insert, with its final id and links."""

    record: Record
    id: str
    parent: str | None
    chain_id: str = ""
    #: The stored head this version supersedes (its pk), stamped when the batch is written.
    retires: int | None = None


class Raced(Exception):
    """A concurrent writer changed what the batch relies on: the batch is retried."""


def copy_id(principal: Principal, original_id: str) -> str:
    """The id this owner's copy of a record gets: stable, URL-safe, 21 characters, never led by '-'."""
    owner_and_id = json.dumps([principal.org_id, principal.user_id, original_id])  # unambiguous, unlike joining
    digest = hashlib.sha256(owner_and_id.encode()).digest()
    return command_line_safe(base64.urlsafe_b64encode(digest).decode("ascii")[:ID_LENGTH])


def line_error(line: int, rule: str, message: str) -> FieldError:
    return FieldError(f"line {line}", rule, message)


def invalid_lines(errors: list[FieldError]) -> InvalidInput:
    """The 422 for a file with ``errors``: it counts lines, as it says, since one line may fail several
    rules (a record superseding itself failed three and was "3 line(s)")."""
    lines = len({error.field for error in errors})
    listed = "" if len(errors) <= MAX_REPORTED_ERRORS else f" (the first {MAX_REPORTED_ERRORS} of {len(errors)} errors are listed)"
    return InvalidInput(
        f"{lines} line(s) are invalid{listed}; nothing was imported",
        errors[:MAX_REPORTED_ERRORS],
    )


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def _owned_rows(session: Session, principal: Principal, ids: set[str]) -> dict[str, MemoryRow]:
    """The caller's own rows among ``ids``: nobody else's rows are ever looked at."""
    found: dict[str, MemoryRow] = {}
    for chunk in _chunks(sorted(ids)):
        statement = sa.select(MemoryRow).where(owned_by(principal), col(MemoryRow.id).in_(chunk))
        found.update((row.id, row) for row in session.scalars(statement))
    return found


def key_heirs(org_id: str, user_id: str, agents: Collection[str | None], words: Collection[str]) -> ColumnElement[bool]:
    """The memories a content key let go of may go on to: current, keyless, of the owner and one of
    ``agents`` (None: no agent), saying one of ``words`` (content hashes). The one rule of
    ``MemoryStore._hand_on`` and of its batched pre-check (``words_with_heirs``), so they cannot drift."""
    agent = col(MemoryRow.agent_id)
    named = sorted(a for a in agents if a is not None)
    whose = ([agent.in_(named)] if named else []) + ([agent.is_(None)] if None in agents else [])
    return sa.and_(
        col(MemoryRow.org_id) == org_id,
        col(MemoryRow.user_id) == user_id,
        sa.or_(sa.false(), *whose),
        col(MemoryRow.content_hash).in_(words),
        col(MemoryRow.idempotency_key).is_(None),
        current(),
    )


def words_with_heirs(session: Session, principal: Principal, heads: Sequence[MemoryRow]) -> set[tuple[str | None, str]]:
    """``(agent_id, content_hash)`` of the retired or deleted ``heads`` that held a content key and
    that a current keyless memory of the caller also says: the only ones whose key can go on
    (``MemoryStore._hand_on``). One read per chunk of words, where a lookup per head made an import
    of 8,000 deletions take minutes."""
    held = {(h.agent_id, h.content_hash) for h in heads if (h.idempotency_key or "").startswith(CONTENT_KEY_PREFIX)}
    agents = {agent for agent, _ in held}
    found: set[tuple[str | None, str]] = set()
    for chunk in _chunks(sorted({words for _, words in held})):
        statement = sa.select(col(MemoryRow.agent_id), col(MemoryRow.content_hash)).where(
            key_heirs(principal.org_id, principal.user_id, agents, chunk)
        )
        found.update((agent, words) for agent, words in session.execute(statement) if (agent, words) in held)
    return found


def _owned_ids(session: Session, principal: Principal, ids: set[str]) -> set[str]:
    """Which of ``ids`` the caller holds already: the id alone, no row is loaded."""
    found: set[str] = set()
    for chunk in _chunks(sorted(ids)):
        found.update(session.scalars(sa.select(col(MemoryRow.id)).where(owned_by(principal), col(MemoryRow.id).in_(chunk))))
    return found


def _current_at_keypaths(session: Session, principal: Principal, keypaths: set[str]) -> dict[str, MemoryRow]:
    found: dict[str, MemoryRow] = {}
    for chunk in _chunks(sorted(keypaths)):
        statement = sa.select(MemoryRow).where(owned_by(principal), current(), col(MemoryRow.keypath).in_(chunk))
        found.update((str(row.keypath), row) for row in session.scalars(statement))
    return found


def _taken_keys(session: Session, org_id: str, keys: set[str]) -> set[str]:
    taken: set[str] = set()
    for chunk in _chunks(sorted(keys)):
        statement = sa.select(col(MemoryRow.idempotency_key)).where(
            col(MemoryRow.org_id) == org_id, col(MemoryRow.idempotency_key).in_(chunk)
        )
        taken.update(session.scalars(statement))
    return taken


def _renamed(principal: Principal, records: Sequence[Record], owned: set[str]) -> tuple[list[Record], dict[str, str]]:
    """Every id the caller does not own replaced by its ``copy_id``; and each new id's original, for messages."""
    original: dict[str, str] = {}

    def final(memory_id: str) -> str:
        new = memory_id if memory_id in owned else copy_id(principal, memory_id)
        original[new] = memory_id
        return new

    renamed = [
        Record(r.line, r.fields | {"id": final(r.id), "supersedes_id": final(r.parent) if r.parent else None})
        for r in records
    ]
    return renamed, original


class _Checker:
    """Collects every reason the records cannot be written, line by line."""

    def __init__(self, records: Sequence[Record], stored: dict[str, MemoryRow], original: dict[str, str]) -> None:
        self.stored = stored
        self.named = original  # the ids as the file names them
        self.errors: list[FieldError] = []
        self.by_id: dict[str, Record] = {}
        self.child_of: dict[str, Record] = {}
        for record in records:
            if record.id in self.by_id:
                self.fail(record, "unique", f"id {self.named[record.id]} is also on line {self.by_id[record.id].line}")
                continue
            self.by_id[record.id] = record
        for record in self.new():
            if record.parent is None:
                continue
            if record.parent in self.child_of:
                self.fail(record, "fork", f"line {self.child_of[record.parent].line} also supersedes {self.named[record.parent]}")
                continue
            self.child_of[record.parent] = record

    def fail(self, record: Record, rule: str, message: str) -> None:
        self.errors.append(line_error(record.line, rule, message))

    def new(self) -> list[Record]:
        """The records to write: those whose id the caller does not hold yet."""
        return [r for r in self.by_id.values() if r.id not in self.stored]

    def check_links(self) -> None:
        for record in self.new():
            parent = record.parent
            version = record.fields.get("version", 1)
            if record.fields.get("deleted_at") is not None and record.id in self.child_of:
                self.fail(record, "deleted", f"it is deleted, but line {self.child_of[record.id].line} supersedes it")
            if record.id in self.child_of and record.fields.get("superseded_at") is None:
                self.fail(record, "superseded", f"line {self.child_of[record.id].line} supersedes it, so it needs superseded_at")
            if record.id not in self.child_of and record.fields.get("superseded_at") is not None:
                self.fail(record, "superseded", "superseded_at is set, but no line supersedes it")
            if parent is None:
                if version != 1:
                    self.fail(record, "version", f"a first version is version 1, not {version}")
                continue
            stored = self.stored.get(parent)
            if stored is None and parent not in self.by_id:
                self.fail(record, "link", f"supersedes_id {self.named[parent]} is neither in this file nor one of your memories")
                continue
            parent_version = stored.version if stored is not None else self.by_id[parent].fields.get("version", 1)
            if version != parent_version + 1:
                self.fail(record, "version", f"it supersedes version {parent_version}, so it is version {parent_version + 1}, not {version}")
            if stored is not None and stored.deleted_at is not None:
                self.fail(record, "deleted", f"it supersedes {self.named[parent]}, which is deleted")
            elif stored is not None and stored.superseded_at is not None:
                self.fail(record, "fork", f"{self.named[parent]} is already superseded by another of your memories")

    def roots(self) -> dict[str, str]:
        """Each new record's topmost new ancestor (the record that starts its part of the chain)."""
        root: dict[str, str] = {}
        for record in self.new():
            path: list[str] = []
            node: Record | None = record
            while node is not None and node.id not in root and node.id not in path:
                path.append(node.id)
                parent = self.by_id.get(node.parent) if node.parent else None
                node = parent if parent is not None and parent.id not in self.stored else None
            if node is not None and node.id not in root:
                self.fail(record, "cycle", "its supersedes_id links form a cycle")
                continue
            top = root[node.id] if node is not None else path[-1]
            root.update((memory_id, top) for memory_id in path)
        return root

    def deletions(self) -> list[Deletion]:
        """The stored current memories the file holds as tombstones: deleted since they were
        imported. A tombstone counts only as the same version as the stored one (its number,
        link and words): any other line with an owned id is skipped, as before it could delete."""
        found = []
        for record in self.by_id.values():
            stored = self.stored.get(record.id)
            if stored is None or record.fields.get("deleted_at") is None or not _same_version(record, stored):
                continue
            if record.id in self.child_of and stored.deleted_at is None:  # a deleted one: check_links says so
                self.fail(self.child_of[record.id], "deleted", f"it supersedes {self.named[record.id]}, which line {record.line} deletes")
            elif stored.deleted_at is None and stored.superseded_at is None:
                found.append(Deletion(stored, record.fields["deleted_at"]))
        return found

    def check_keypaths(self, heads: list[Record], stored_current: dict[str, MemoryRow], retired: set[str]) -> None:
        """One current value per keypath: the live heads this import writes, and the ones already stored."""
        seen: dict[str, Record] = {}
        for head in heads:
            keypath = head.fields.get("keypath")
            if keypath is None or head.fields.get("deleted_at") is not None:
                continue
            if keypath in seen:
                self.fail(head, "keypath", f"line {seen[keypath].line} is also the current value of {keypath}")
                continue
            seen[keypath] = head
            other = stored_current.get(keypath)
            if other is not None and other.id not in retired:
                self.fail(head, "keypath", f"{keypath} already has a current value, {other.id}")


def _same_version(record: Record, stored: MemoryRow) -> bool:
    return (
        record.fields.get("version", 1) == stored.version
        and record.parent == stored.supersedes_id
        and record.fields.get("superseded_at") is None
        and content_hash(str(record.fields["content"])) == stored.content_hash
    )


@dataclass(frozen=True)
class Deletion:
    """A stored current memory that a tombstone of the file deletes, and the file's ``deleted_at``."""

    head: MemoryRow
    moment: datetime


@dataclass(frozen=True)
class Plan:
    """What an import writes: the stored memories it deletes, then new rows batch by batch."""

    deletions: list[Deletion]
    batches: list[list[Planned]]


def plan(session: Session, principal: Principal, records: Sequence[Record]) -> Plan:
    """The records as a :class:`Plan`, or ``InvalidInput`` naming every line that would break a chain."""
    file_ids = {r.id for r in records} | {r.parent for r in records if r.parent}
    candidates = file_ids | {copy_id(principal, memory_id) for memory_id in file_ids}
    stored = _owned_rows(session, principal, candidates)
    renamed, original = _renamed(principal, records, set(stored))

    checker = _Checker(renamed, stored, original)
    roots: dict[str, str] = {}
    if not checker.errors:
        checker.check_links()
        roots = checker.roots()
    new = checker.new()
    heads = [r for r in new if r.id not in checker.child_of]
    deletions = checker.deletions()
    if not checker.errors:
        keypaths = {str(h.fields["keypath"]) for h in heads if h.fields.get("keypath")}
        retired = {r.parent for r in new if r.parent is not None and r.parent in stored} | {d.head.id for d in deletions}
        checker.check_keypaths(heads, _current_at_keypaths(session, principal, keypaths), retired)
    if checker.errors:
        checker.errors.sort(key=lambda e: int(e.field.removeprefix("line ")))
        raise invalid_lines(checker.errors)
    return Plan(deletions, _batches(new, roots, stored))


def _batches(new: list[Record], roots: dict[str, str], stored: dict[str, MemoryRow]) -> list[list[Planned]]:
    """Whole chains per batch, each chain's versions in order, about ``BATCH_ROWS`` rows a batch."""
    chains: dict[str, list[Record]] = defaultdict(list)
    for record in new:
        chains[roots[record.id]].append(record)
    batches: list[list[Planned]] = []
    batch: list[Planned] = []
    for chain in chains.values():
        batch.extend(_in_order(chain, stored))
        if len(batch) >= BATCH_ROWS:
            batches.append(batch)
            batch = []
    if batch:
        batches.append(batch)
    return batches


def _in_order(chain: list[Record], stored: dict[str, MemoryRow]) -> list[Planned]:
    """One chain's new versions, each after the one it supersedes, with chain ids and retirements."""
    by_parent = {r.parent: r for r in chain if r.parent}
    first = next(r for r in chain if r.parent is None or r.parent in stored)
    parent_row = stored.get(first.parent) if first.parent else None
    chain_id = parent_row.chain_id if parent_row is not None else first.id
    ordered: list[Planned] = []
    node: Record | None = first
    while node is not None:
        ordered.append(Planned(node, node.id, node.parent, chain_id))
        node = by_parent.get(node.id)
    if parent_row is not None:
        ordered[0].retires = parent_row.pk
    return ordered


#: The memory table: imports write it through Core, one multi-row INSERT per batch. An ORM
#: object per row (construction, attribute events, the unit of work) was most of an import's time.
_TABLE: sa.Table = MemoryRow.__table__  # type: ignore[attr-defined]
#: Every column a row names, and what it holds when a record leaves it out (the table's own
#: default, else NULL): a multi-row INSERT takes its columns from the first row and would
#: silently drop a value that only a later row names. Callable defaults (timestamps, empty
#: lists) are called per row, as Core would.
_DEFAULTS = {c.key: c.default for c in _TABLE.columns if isinstance(c.default, sa.ColumnDefault)}
_FIXED = {c.key: None for c in _TABLE.columns if c.key != "pk"} | {k: d.arg for k, d in _DEFAULTS.items() if d.is_scalar}
_MADE = {k: d.arg for k, d in _DEFAULTS.items() if d.is_callable}
#: Columns that hold NULL when an INSERT leaves them out.
_NULL_UNLESS_SET = frozenset(c.key for c in _TABLE.columns if c.nullable and c.default is None and c.server_default is None)


def new_rows(principal: Principal, batch: Sequence[Planned], embedder: Embedder | None) -> list[dict[str, Any]]:
    """The batch's column values, built and indexed before its transaction opens: that is most of the work."""
    rows = []
    for planned in batch:
        fields = {k: v for k, v in planned.record.fields.items() if k not in ("id", "user_id", "supersedes_id")}
        own = {
            "id": planned.id,
            "org_id": principal.org_id,
            "user_id": principal.user_id,
            "supersedes_id": planned.parent,
            "chain_id": planned.chain_id,
            "content_hash": content_hash(fields["content"]),
            "idempotency_key": None,
        }
        # Core's callables take a context, which these defaults ignore.
        made = {name: make(None) for name, make in _MADE.items() if name not in fields and name not in own}
        rows.append(_FIXED | made | fields | own)
    derive(rows, embedder)
    return rows


@dataclass(frozen=True)
class Written:
    """What a batch wrote: how many rows, and the stored heads it retired as they were (their
    keys included), whose content keys may go on to another memory (``MemoryStore._hand_on``)."""

    rows: int
    retired: list[MemoryRow]


def write_batch(session: Session, principal: Principal, batch: Sequence[Planned], rows: Sequence[dict[str, Any]]) -> Written:
    """Insert the rows the caller does not hold yet (a concurrent import may have written some)."""
    present = _owned_ids(session, principal, {p.id for p in batch})
    missing = [row for planned, row in zip(batch, rows, strict=True) if planned.id not in present]
    retiring = [(planned, planned.retires) for planned in batch if planned.retires is not None and planned.id not in present]
    heads = [pk for _, pk in retiring]
    retired = list(session.scalars(sa.select(MemoryRow).where(col(MemoryRow.pk).in_(heads)))) if heads else []
    for planned, head_pk in retiring:
        _retire(session, head_pk, planned.record.fields["created_at"])
    release_content_keys(session, {planned.chain_id for planned, _ in retiring})  # the new heads take their own
    release_every_key(session, {p.chain_id for p in batch if p.record.fields.get("deleted_at") is not None})  # as a delete does
    _restore_content_keys(session, principal, missing)
    inserted = _insert_rows(session, missing)
    changes.touch(session, principal.org_id, [*inserted.values(), *(head_pk for _, head_pk in retiring)])
    return Written(len(inserted), retired)


def _insert_rows(session: Session, rows: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Every memory row an import writes is inserted here, in order (a version after the one it
    supersedes); returns each one's pk by id (each row carries its owner and scope).

    A column no row sets is left out (it is NULL either way): fewer values to quote and parse,
    which on MySQL's driver is most of the client's share of the INSERT. RETURNING in
    parameter order would cost SQLite one statement per row (its multi-row RETURNING has no
    guaranteed order), so the ids come back with the pks instead."""
    if not rows:
        return {}
    named = [name for name in _FIXED if name not in _NULL_UNLESS_SET or any(row[name] is not None for row in rows)]
    returned = session.execute(
        sa.insert(_TABLE).returning(_TABLE.c.id, _TABLE.c.pk), [{name: row[name] for name in named} for row in rows]
    )
    return {memory_id: pk for memory_id, pk in returned}


def _retire(session: Session, head_pk: int, moment: datetime) -> None:
    """A stored head that an imported version supersedes is the head no longer, unless a writer beat us to it."""
    if not stamp_if_current(session, head_pk, "superseded_at", moment):
        raise Raced()


def stamp_if_current(session: Session, pk: int | None, column: str, moment: datetime, *, now: datetime | None = None) -> bool:
    """Set ``column`` (superseded_at or deleted_at) on row ``pk`` to ``moment`` if it is still current:
    whether it was (a racing writer may have stamped it first). Saves, changes and deletes use it too.

    ``updated_at`` becomes ``now`` (default ``moment``) unless it is later already: a row's
    timestamps never go back, though an imported moment is another clock's and an imported row's
    ``updated_at`` may be ahead of this one's."""
    updated = col(MemoryRow.updated_at)
    later = sa.literal(moment if now is None else now, UTCDateTime())
    result: sa.CursorResult[Any] = session.execute(  # type: ignore[assignment]
        sa.update(MemoryRow)
        .where(col(MemoryRow.pk) == pk, current())
        .values({column: moment, "updated_at": sa.case((updated > later, updated), else_=later)})
        .execution_options(synchronize_session=False)
    )
    return result.rowcount == 1


def _restore_content_keys(session: Session, principal: Principal, rows: Sequence[dict[str, Any]]) -> None:
    """Give each live chain's current version the content key a save and its changes would have
    given it (``MemoryStore._supersede``), and every other row none, so a retried batch starts
    from the same values."""
    tombstoned = {row["chain_id"] for row in rows if row.get("deleted_at") is not None}
    wanted = {
        row["id"]: content_key(principal.org_id, principal.user_id, row.get("agent_id"), row["content"])
        for row in rows
        if row.get("superseded_at") is None and row["chain_id"] not in tombstoned
    }
    taken = _taken_keys(session, principal.org_id, set(wanted.values()))
    for row in rows:
        key = wanted.get(row["id"])
        row["idempotency_key"] = key if key is not None and key not in taken else None
        if key is not None:
            taken.add(key)


def delete_stored(session: Session, principal: Principal, deletions: Sequence[Deletion]) -> list[MemoryRow]:
    """Tombstone the stored heads of ``deletions`` that are still current and free their keys, as
    a delete does; returns those it deleted (a concurrent writer may have changed the others).

    ``deleted_at`` is the file's, when the source deleted it (a re-export passes it on); the
    deletion here is made now, so ``updated_at`` is now: the file's moment, from another clock or
    an edited file, could be before the copy last changed."""
    now = utcnow()
    deleted = [d.head for d in deletions if stamp_if_current(session, d.head.pk, "deleted_at", d.moment, now=now)]
    release_every_key(session, {head.chain_id for head in deleted})
    changes.touch(session, principal.org_id, [head.pk for head in deleted])
    return deleted


def run(engine: Engine, principal: Principal, records: Sequence[Record]) -> tuple[int, int, list[MemoryRow]]:
    """Check the records against the caller's memories, then apply its deletions and write the
    rest batch by batch: (imported, skipped, the stored heads retired or deleted, whose content
    keys may go on)."""
    with transaction(engine) as session:
        planned = plan(session, principal, records)
    retired: list[MemoryRow] = []
    for start in range(0, len(planned.deletions), BATCH_ROWS):  # first: a new head may take the keypath a deleted one held
        deletions = planned.deletions[start : start + BATCH_ROWS]
        retired += _retrying(engine, principal, partial(delete_stored, principal=principal, deletions=deletions), len(retired))
    imported = len(retired)
    for batch in planned.batches:
        rows = new_rows(principal, batch, engine.get_execution_options().get(EMBEDDER_OPTION))
        written = _retrying(engine, principal, partial(write_batch, principal=principal, batch=batch, rows=rows), imported)
        imported += written.rows
        retired += written.retired
    return imported, len(records) - imported, retired


def _retrying(engine: Engine, principal: Principal, write: Callable[[Session], T], written: int) -> T:
    """``write`` in a write transaction of its own, as the caller's agent (refused once it is
    deactivated: the batches written before stay), again when a concurrent writer got in first."""
    for _ in range(BATCH_ATTEMPTS):
        try:
            with writing_as(engine, principal, principal.agent_id) as session:
                return write(session)
        except (Raced, IntegrityError):
            continue
        except DatabaseBusy as busy:  # a deadlock victim was rolled back whole; a lock wait that ran out already waited
            if not busy.deadlock:
                raise
    raise Conflict(
        f"your memories changed while the import was written; {written} records were written and stay "
        "(importing the same file again skips them)",
    )
