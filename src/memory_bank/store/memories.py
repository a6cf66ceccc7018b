"""``MemoryStore``: every read and write of memories, owner-scoped in the SQL itself.

Synchronous on purpose (SQLAlchemy sessions); handlers call it from a worker thread.
Writes never overwrite: a change inserts a new version row and stamps the old one
``superseded_at``; a delete stamps the head ``deleted_at`` (a tombstone). The stamp
is a guarded UPDATE (``... WHERE superseded_at IS NULL``) so that two racing
writers cannot both extend a chain: the loser gets 409.

Reading and writing are scoped differently: an org-scoped memory is readable (and
can be given feedback) by everyone in the organisation, but only its owner may
change or delete it; to anyone else it is 404, like any memory that is not theirs.
One owner has at most one current value per keypath: the database enforces it
(``uq_memory_current_keypath``, migration 0004), and a PUT that loses a race to it
retries on the value that won.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import ColumnElement
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm.attributes import set_committed_value
from sqlmodel import Session, col

from memory_bank.errors import BackendUnavailable, Conflict, NotFound
from memory_bank.security.principal import Principal
from memory_bank.settings import Settings
from memory_bank.store import importer
from memory_bank.store.columns import new_id, utcnow
from memory_bank.store.contention import DatabaseBusy, retried_after_deadlock
from memory_bank.store.database import search_backend, transaction, vector_index
from memory_bank.store.fence import writing_as
from memory_bank.store.filters import MemoryFilter, current, not_deleted, owned_by, visible_to
from memory_bank.store.idempotency import (
    CONTENT_KEY_PREFIX,
    content_hash,
    content_key,
    header_key,
    release_content_keys,
    release_every_key,
)
from memory_bank.store.keyset import MEMORIES
from memory_bank.store.search.indexing import EMBEDDER_OPTION
from memory_bank.store.search import changes
from memory_bank.store.search.pipeline import MemorySearch
from memory_bank.store.search.postings import OwnerPostings
from memory_bank.store.search.semantic import Reader
from memory_bank.store.tables import FeedbackRow, MemoryRow
from memory_bank.store.tags import with_tag_set
from memory_bank.textsearch.embeddings import Embedder

log = logging.getLogger(__name__)

#: ``page(after, size)`` of ``MemoryStore.export_snapshot``.
ExportPages = Callable[[MemoryRow | None, int], list[MemoryRow]]

#: The fields a writer chooses; a new version starts from its predecessor's values.
VERSIONED_FIELDS = (
    "scope", "project_id", "keypath", "content", "source", "category", "confidence", "tags", "contexts",
)  # fmt: skip


#: What a PATCH may change besides the words (``MemoryPatch``): where a memory lives and who sees it stay.
PATCHABLE_FIELDS = frozenset(VERSIONED_FIELDS) - {"scope", "keypath", "content"}

#: A PUT racing others to one keypath re-reads and tries again this often before giving up with 409.
PUT_ATTEMPTS = 8
#: A save whose key's holder let go of it between the refusal and the lookup tries again this often.
SAVE_ATTEMPTS = 4
#: Heirs tried for a key let go of, when the one found stops being current before it takes it.
HAND_ON_ATTEMPTS = 3
#: What the in-process vector index may hold unless told (the setting's default).
VECTOR_CACHE_BYTES = int(Settings.model_fields["vector_cache_mb"].default) * 2**20
LEXICAL_CACHE_BYTES = int(Settings.model_fields["lexical_cache_mb"].default) * 2**20


class ConcurrentChange(Conflict):
    """Another writer extended or deleted the chain between our read and our write."""

    def __init__(self) -> None:
        super().__init__("the memory was changed concurrently; read it again")


def _keypath_taken(keypath: str) -> Conflict:
    return Conflict(f"keypath {keypath!r} already has a current value; PUT /v1/memory/keypaths/{keypath} to replace it")


class MemoryStore:
    def __init__(
        self,
        engine: Engine,
        embedder: Embedder | None = None,
        vector_cache_bytes: int = VECTOR_CACHE_BYTES,
        lexical_cache_bytes: int = LEXICAL_CACHE_BYTES,
    ) -> None:
        """``embedder`` (``search.semantic.embedder_for``) turns on the semantic half of search:
        rows inserted through this store get vectors (``store.search.indexing``), searches fuse them,
        finding the nearest through the backend's vector index (``vector_cache_bytes``: what an
        in-process one may hold). ``lexical_cache_bytes``: what the owners' postings may hold
        (``store.search.postings``; 0: none, every search takes ``store.search.lexical``'s plan)."""
        self._engine = engine.execution_options(**{EMBEDDER_OPTION: embedder}) if embedder else engine
        self._search = search_backend(engine)
        vectors = vector_index(engine, vector_cache_bytes) if embedder else None
        postings = OwnerPostings(lexical_cache_bytes) if lexical_cache_bytes else None
        self._ranking = MemorySearch(self._search, embedder, vectors, postings)

    # -- create ---------------------------------------------------------------

    @retried_after_deadlock
    def create(
        self, principal: Principal, fields: Mapping[str, Any], idempotency_key: str | None = None
    ) -> tuple[MemoryRow, bool]:
        """Save a memory once; returns (record, created). A replay returns the first record.

        ``fields`` are MemoryCreate's, unset ones left out (column defaults apply).
        The row is inserted without looking first: a replay (or a save to a keypath
        that has a current value) trips a unique key, and only then is the row that
        holds it read, in a transaction of its own. A new save, the common case, is
        one statement; a lookup first cost every save a round trip to spare replays one.
        """
        values = with_tag_set({k: v for k, v in fields.items() if k != "agent_id"})
        agent = principal.agent_id or fields.get("agent_id")
        key = (
            header_key(principal.org_id, principal.user_id, idempotency_key)
            if idempotency_key is not None
            else content_key(principal.org_id, principal.user_id, agent, values["content"])
        )
        digest = content_hash(values["content"])
        keypath: str | None = values.get("keypath")
        for _ in range(SAVE_ATTEMPTS):
            try:
                with writing_as(self._engine, principal, agent) as session:
                    return self._insert(session, principal, agent, values, idempotency_key=key), True
            except IntegrityError:
                with transaction(self._engine) as session:
                    first = self._by_key(session, principal, key)
                    if first is None and keypath is not None and self._current_at(session, principal, keypath) is not None:
                        raise _keypath_taken(keypath) from None
            if first is not None:
                if first.content_hash != digest:
                    raise Conflict("this Idempotency-Key was already used for different content")
                differing = _asked_otherwise(first, values) + (["agent_id"] if agent != first.agent_id else [])
                if differing:
                    with transaction(self._engine) as session:
                        head = self._head_of(session, first)
                    raise _saved_otherwise(head, differing, keypath)
                return first, False
            # What refused it was deleted (its keys released) or moved on since: save again.
        raise ConcurrentChange()

    def _head_of(self, session: Session, version: MemoryRow) -> MemoryRow:
        """The current version of ``version``'s chain (a header key stays on the version its save made)."""
        return version if version.superseded_at is None else (_chain_head(session, version) or version)

    def _current_at(self, session: Session, principal: Principal, keypath: str, *, lock: bool = False) -> MemoryRow | None:
        """The caller's own current value at ``keypath``, if any; ``lock`` (a PUT about to
        replace it) holds it until COMMIT, so PUTs racing to replace one value queue behind
        each other on MySQL/MariaDB instead of each losing the guarded stamp and starting
        over (SQLite's write transactions are serial already)."""
        statement = sa.select(MemoryRow).where(owned_by(principal), col(MemoryRow.keypath) == keypath, current())
        return session.scalars(statement.with_for_update() if lock else statement).first()

    def _by_key(self, session: Session, principal: Principal, key: str) -> MemoryRow | None:
        statement = sa.select(MemoryRow).where(owned_by(principal), col(MemoryRow.idempotency_key) == key)
        return session.scalars(statement).first()

    def _insert(
        self,
        session: Session,
        principal: Principal,
        agent: str | None,
        values: Mapping[str, Any],
        *,
        predecessor: MemoryRow | None = None,
        idempotency_key: str | None = None,
        now: datetime | None = None,
    ) -> MemoryRow:
        """Insert version 1 of a new chain, or the successor of ``predecessor``."""
        now = now or utcnow()
        memory_id = new_id()
        row = MemoryRow(
            **values,
            id=memory_id,
            org_id=principal.org_id if predecessor is None else predecessor.org_id,
            user_id=principal.user_id if predecessor is None else predecessor.user_id,
            agent_id=agent,
            content_hash=content_hash(values["content"]),
            idempotency_key=idempotency_key,
            version=1 if predecessor is None else predecessor.version + 1,
            supersedes_id=None if predecessor is None else predecessor.id,
            chain_id=memory_id if predecessor is None else predecessor.chain_id,
            created_at=now,
            updated_at=now,
        )
        session.add(row)
        session.flush()
        changes.touch(session, row.org_id, [row.pk])
        return row

    # -- read -----------------------------------------------------------------

    def get(self, principal: Principal, memory_id: str) -> MemoryRow:
        """Any version of a chain that is not deleted; otherwise, or not visible, 404."""
        with transaction(self._engine) as session:
            return self._readable(session, principal, memory_id)

    def _readable(self, session: Session, principal: Principal, memory_id: str) -> MemoryRow:
        return self._one(session, col(MemoryRow.id) == memory_id, visible_to(principal), not_deleted())

    def _writable(self, session: Session, principal: Principal, memory_id: str) -> MemoryRow:
        """A version the caller owns: readable is not enough to change or delete it."""
        return self._one(session, col(MemoryRow.id) == memory_id, owned_by(principal), not_deleted())

    def _one(self, session: Session, *where: ColumnElement[bool]) -> MemoryRow:
        row = session.scalars(sa.select(MemoryRow).where(*where)).first()
        if row is None:
            raise NotFound.of("memory")
        return row

    def history(self, principal: Principal, memory_id: str) -> list[MemoryRow]:
        """The visible versions of the chain ``memory_id`` belongs to, oldest first, tombstone included.

        A deleted chain's history is its owner's alone: to another member of the org a
        forgotten org memory is 404 here as in every other read, not its words by another door.
        """
        with transaction(self._engine) as session:
            row = self._one(
                session, col(MemoryRow.id) == memory_id, visible_to(principal), sa.or_(owned_by(principal), not_deleted())
            )
            statement = (
                sa.select(MemoryRow)
                .where(col(MemoryRow.chain_id) == row.chain_id, visible_to(principal))
                .order_by(col(MemoryRow.version), col(MemoryRow.created_at))
            )
            return list(session.scalars(statement))

    def page(
        self, principal: Principal, where: MemoryFilter, limit: int, cursor: str | None = None
    ) -> tuple[list[MemoryRow], str | None]:
        """One page newest first and the cursor of the next page (None on the last)."""
        statement = sa.select(MemoryRow).where(*where.clauses(principal, self._search))
        return MEMORIES.page(self._engine, statement, limit, cursor, descending=True)

    def search(
        self, principal: Principal, where: MemoryFilter, q: str | None, limit: int, min_score: float = 0.0
    ) -> list[tuple[MemoryRow, float]]:
        """Ranked hits with scores in [0, 1] (``store.search.pipeline``).

        Without ``q`` every matching memory scores 1 and they come ordered by
        keypath (memories without one last), then oldest first. A ``q`` with no
        searchable word finds nothing, unless semantic search is on.
        """
        clauses = where.clauses(principal, self._search)
        with transaction(self._engine) as session:
            if q is None:
                statement = (
                    sa.select(MemoryRow)
                    .where(*clauses)
                    .order_by(col(MemoryRow.keypath).is_(None), col(MemoryRow.keypath), *MEMORIES.order(descending=False))
                    .limit(limit)
                )
                return [(row, 1.0) for row in session.scalars(statement)]
            reader = Reader(principal.org_id, principal.user_id, current_only=not where.include_superseded)
            return self._ranking.search(session, reader, clauses, q, limit, min_score, filtered=where.narrows)

    # -- versions -------------------------------------------------------------

    @retried_after_deadlock
    def patch(
        self, principal: Principal, memory_id: str, changes: Mapping[str, Any], expected_version: int | None = None
    ) -> MemoryRow:
        """Write the next version with ``changes`` applied; only the head can be patched.

        A patch that changes nothing (a client's retry, say) writes nothing and returns the head.
        """
        with writing_as(self._engine, principal, principal.agent_id) as session:
            head = self._writable(session, principal, memory_id)
            if head.superseded_at is not None:
                raise _superseded(session, head, "patch")
            if expected_version is not None and expected_version != head.version:
                raise Conflict(f"expected version {expected_version}, but the current version is {head.version}")
            values = {name: getattr(head, name) for name in VERSIONED_FIELDS} | with_tag_set(changes)
            if _repeats(head, values, principal.agent_id):
                return head
            successor = self._supersede(session, principal, principal.agent_id, head, values)
        self._hand_on(head, successor)
        return successor

    def _supersede(
        self, session: Session, principal: Principal, agent: str | None, head: MemoryRow, values: Mapping[str, Any]
    ) -> MemoryRow:
        now = utcnow()
        self._stamp(session, head, "superseded_at", now)
        successor = self._insert(session, principal, agent, values, predecessor=head, now=now)
        self._move_content_key(session, successor)
        return successor

    def _move_content_key(self, session: Session, successor: MemoryRow) -> None:
        """Give the chain's content key to its new version, as the key of the words it says now.

        Left on version 1, saving the words a memory was changed to made a second memory, and
        saving the words it no longer says answered with the superseded version. Another
        memory may hold the new words' key already (it said them first): it keeps it, and
        this version has none. The key of the words given up goes on, once the write has
        committed, to a memory that still says them (``_hand_on``).
        """
        release_content_keys(session, [successor.chain_id])  # the successor was inserted without one
        key = content_key(successor.org_id, successor.user_id, successor.agent_id, successor.content)
        if _take_key(session, successor.pk, key):
            set_committed_value(successor, "idempotency_key", key)

    def _stamp(self, session: Session, head: MemoryRow, column: str, moment: datetime) -> None:
        """Set ``column`` (superseded_at or deleted_at) on the chain head, unless a racing writer did first."""
        if not importer.stamp_if_current(session, head.pk, column, moment):
            raise ConcurrentChange()
        changes.touch(session, head.org_id, [head.pk])

    @retried_after_deadlock
    def delete(self, principal: Principal, memory_id: str) -> None:
        """Tombstone the head and free the chain's idempotency keys, header and content alike.

        A forgotten memory holds no key: saving the same words again, or replaying the
        same Idempotency-Key, creates a live memory instead of answering with the tombstone.
        A racing write that stamped the head first is read again, so the loser of two deletes
        hears 404, as after the other's, and the loser to a patch hears the new version's id.
        """
        try:
            self._delete_once(principal, memory_id)
        except ConcurrentChange:
            self._delete_once(principal, memory_id)

    def _delete_once(self, principal: Principal, memory_id: str) -> None:
        with writing_as(self._engine, principal, principal.agent_id) as session:
            head = self._writable(session, principal, memory_id)
            if head.superseded_at is not None:
                raise _superseded(session, head, "delete")
            self._stamp(session, head, "deleted_at", utcnow())
            release_every_key(session, [head.chain_id])
        self._hand_on(head)

    def _hand_on(self, holder: MemoryRow, successor: MemoryRow | None = None) -> None:
        """Pass the content key ``holder`` let go of (``successor`` took another, or none: it was
        deleted) to the oldest current memory of the same owner and agent that says the same
        words and holds no key (``importer.key_heirs``, which an import's pre-check shares).

        Such a memory was changed to those words while ``holder`` held their key; left keyless,
        saving the words again would make a second memory beside it. This runs after the write
        has committed, in a transaction of its own: inside the write, REPEATABLE READ's snapshot
        predates a memory a concurrent write changed to those words, and a key handed to a row
        another write has since superseded would answer saves with that version. The heir is
        looked for in a read, so the common case (no memory says those words) takes no second
        write lock. It is bookkeeping: if it fails, the write stands.
        """
        released = holder.idempotency_key
        if released is None or not released.startswith(CONTENT_KEY_PREFIX):
            return
        if successor is not None and successor.idempotency_key == released:
            return
        heirs = (
            sa.select(col(MemoryRow.pk))
            .where(importer.key_heirs(holder.org_id, holder.user_id, [holder.agent_id], [holder.content_hash]))
            .order_by(col(MemoryRow.created_at), col(MemoryRow.pk))
            .limit(1)
        )
        for _ in range(HAND_ON_ATTEMPTS):
            try:
                with transaction(self._engine) as session:
                    heir = session.scalars(heirs).first()
                if heir is None:
                    return
                with transaction(self._engine, write=True) as session:
                    if _take_key(session, heir, released, if_current=True) is not False:
                        return
            except (BackendUnavailable, SQLAlchemyError) as exc:
                log.warning("content key not handed on: %s", type(exc).__name__)
                return

    # -- keypaths -------------------------------------------------------------

    def put_keypath(self, principal: Principal, keypath: str, fields: Mapping[str, Any]) -> tuple[MemoryRow, bool]:
        """Set the caller's value at ``keypath``; returns (record, created).

        A put is a whole value: fields left out take their defaults, not the old
        value's. Putting the value already there writes nothing and returns it.
        """
        values = with_tag_set({k: v for k, v in fields.items() if k != "agent_id"}) | {"keypath": keypath}
        agent = principal.agent_id or fields.get("agent_id")
        attempts = PUT_ATTEMPTS
        while True:
            try:
                return self._put_once(principal, agent, keypath, values)
            except (IntegrityError, ConcurrentChange, DatabaseBusy) as exc:
                # Another PUT to this keypath committed first (the unique key, the guarded
                # stamp or InnoDB's deadlock check said so): a PUT is a whole value, so it
                # applies on top of the one that won. A lock wait that ran out is not retried.
                if isinstance(exc, DatabaseBusy) and not exc.deadlock:
                    raise
                attempts -= 1
                if attempts == 0:
                    raise ConcurrentChange() from None

    def _put_once(
        self, principal: Principal, agent: str | None, keypath: str, values: Mapping[str, Any]
    ) -> tuple[MemoryRow, bool]:
        # On MySQL/MariaDB at READ COMMITTED: InnoDB's REPEATABLE READ locks the gaps of the
        # keypath's index range as well as its value, and the winner's insert of the successor
        # into that range deadlocked with the PUTs queued on it: of 100 PUTs at once, 354
        # deadlocks and a quarter out of attempts (409). READ COMMITTED takes record locks only,
        # and reads what the winner committed: the same 100 all land, none deadlocking.
        with writing_as(self._engine, principal, agent, read_committed=True) as session:
            head = self._current_at(session, principal, keypath)
            if head is not None:  # lock only a value that is there
                head = self._current_at(session, principal, keypath, lock=True)
            if head is None:
                return self._insert(session, principal, agent, values), True
            if _repeats(head, values, agent):
                return head, False
            successor = self._supersede(session, principal, agent, head, values)
        self._hand_on(head, successor)
        return successor, False

    def get_keypath(self, principal: Principal, keypath: str) -> MemoryRow:
        """The current value at ``keypath``: the caller's own first, else the newest shared one."""
        with transaction(self._engine) as session:
            statement = (
                sa.select(MemoryRow)
                .where(visible_to(principal), col(MemoryRow.keypath) == keypath, current())
                .order_by(sa.case((col(MemoryRow.user_id) == principal.user_id, 0), else_=1), *MEMORIES.order(descending=True))
            )
            row = session.scalars(statement).first()
        if row is None:
            raise NotFound.of("keypath")
        return row

    # -- feedback -------------------------------------------------------------

    def add_feedback(self, principal: Principal, memory_id: str, fields: Mapping[str, Any]) -> FeedbackRow:
        with writing_as(self._engine, principal, principal.agent_id) as session:
            memory = self._readable(session, principal, memory_id)  # feedback needs only read access
            row = FeedbackRow(**fields, memory_id=memory.id, org_id=principal.org_id, user_id=principal.user_id)
            session.add(row)
            session.flush()
            return row

    # -- transfer -------------------------------------------------------------

    @contextmanager
    def export_snapshot(self, principal: Principal) -> Iterator[ExportPages]:
        """Pages of the rows the caller owns (``page(after, size)``: the ``size`` rows after
        ``after``, oldest first, superseded and deleted included), all read in one transaction.

        One snapshot, so the export is a state the account was in: read page by page in
        transactions of their own, a change made mid-export left a version current in an
        early page that a later page's successor supersedes, and the file would not import.
        """
        with transaction(self._engine) as session:

            def page(after: MemoryRow | None, size: int) -> list[MemoryRow]:
                clauses = [owned_by(principal)]
                if after is not None:
                    clauses.append(MEMORIES.beyond(MEMORIES.key_of(after), descending=False))
                statement = sa.select(MemoryRow).where(*clauses).order_by(*MEMORIES.order(descending=False)).limit(size)
                return list(session.scalars(statement))

            yield page

    def import_records(self, principal: Principal, records: Sequence[importer.Record]) -> tuple[int, int]:
        """Write exported records into the caller's account, checked whole, written in batches:
        (imported, skipped). A stored head an imported version changed or deleted lets its
        content key go on, as a patch or a delete does (``_hand_on``)."""
        imported, skipped, retired = importer.run(self._engine, principal, records)
        with transaction(self._engine) as session:
            heirs = importer.words_with_heirs(session, principal, retired)
        for head in retired:
            if (head.agent_id, head.content_hash) in heirs:
                self._hand_on(head)
        return imported, skipped


def _asked_otherwise(first: MemoryRow, values: Mapping[str, Any]) -> list[str]:
    """The fields a save of ``first``'s words sets to something ``first`` does not have.

    A save that says the same words is a repeat only when it asks for nothing else: returning
    ``first`` for one that sets another keypath, scope or tags would answer 200 for a write
    that was not made. Tags are a set here, so their order alone is no difference.
    """
    def same(name: str, value: Any) -> bool:
        held = getattr(first, name)
        return set(value) == set(held) if name == "tags" else bool(value == held)

    return [name for name, value in values.items() if name != "content" and not same(name, value)]


def _saved_otherwise(head: MemoryRow, differing: Sequence[str], keypath: str | None) -> Conflict:
    """The 409 for a save that repeats an earlier one's words or key but not its fields, saying how
    to make the write meant: ``head`` is that memory's current version, the one a PATCH changes;
    a keypath, which no PATCH moves, takes the words by a PUT of its own."""
    patchable = [name for name in differing if name in PATCHABLE_FIELDS]
    advice = f"; PATCH /v1/memory/{head.id} to change {', '.join(patchable)}" if patchable else ""
    if "keypath" in differing and keypath is not None:
        advice += f"; PUT /v1/memory/keypaths/{keypath} to set these words there"
    return Conflict(
        f"these words were saved as memory {head.id} with different {', '.join(differing)}, so this is not a"
        f" repeat of that save{advice}"
    )


def _repeats(head: MemoryRow, values: Mapping[str, Any], agent: str | None) -> bool:
    """Whether writing ``values`` as ``agent`` would only repeat ``head`` (fields left out take their defaults)."""
    candidate = MemoryRow(**values)
    return agent == head.agent_id and all(getattr(candidate, f) == getattr(head, f) for f in VERSIONED_FIELDS)


def _take_key(session: Session, pk: int | None, key: str, *, if_current: bool = False) -> bool | None:
    """Give row ``pk`` the idempotency key ``key``: True; False when ``if_current`` and the row is
    no longer a keyless current version (the UPDATE reads the latest row, not the snapshot);
    None when another row holds the key.

    The savepoint keeps the refusal (the unique key) from undoing the rest of the write.
    """
    statement = sa.update(MemoryRow).where(col(MemoryRow.pk) == pk)
    if if_current:
        statement = statement.where(current(), col(MemoryRow.idempotency_key).is_(None))
    try:
        with session.begin_nested():
            result: sa.CursorResult[Any] = session.execute(  # type: ignore[assignment]
                statement.values(idempotency_key=key).execution_options(synchronize_session=False)
            )
    except IntegrityError:
        return None
    return result.rowcount == 1


def _chain_head(session: Session, version: MemoryRow) -> MemoryRow | None:
    """The current version of ``version``'s chain; None once the chain is deleted."""
    return session.scalars(sa.select(MemoryRow).where(col(MemoryRow.chain_id) == version.chain_id, current())).first()


def _superseded(session: Session, version: MemoryRow, verb: str) -> Conflict:
    """409 for a write to a superseded version, naming the current one: an agent holding the id
    it saved, from before a change, can then act on the memory without a search."""
    head = _chain_head(session, version)
    if head is None:  # superseded by a racing writer that then deleted the chain
        return Conflict(f"this version was superseded; {verb} the current version instead")
    return Conflict(f"this version was superseded by {head.id} (version {head.version}); {verb} that one instead")
