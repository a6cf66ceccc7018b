"""Every table: memories, tokens, feedback, agents and audit events (DESIGN §5, §6).

One module, so the schema the migrations are compared against reads in one place.

Every memory version is its own row and rows are never rewritten except to stamp
``superseded_at``/``deleted_at`` (and release an idempotency key), so history and
export are plain reads. ``pk`` is a surrogate integer: it anchors the SQLite FTS5
external-content index and keeps InnoDB inserts sequential, while ``id`` is the
public random id.

One index lives in the migrations only: ``uq_memory_current_keypath`` (0004), at
most one current row per (org, user, keypath). Its form differs by backend (a
partial index on SQLite, a generated column on MariaDB/MySQL), which a model-level
``Index`` cannot say; the ORM never reads or writes that column.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from memory_bank.store.columns import IdType, SearchTextType, SurrogateKey, UTCDateTime, empty_list, new_id, utcnow


class MemoryRow(SQLModel, table=True):
    __tablename__ = "memory"
    __table_args__ = (
        sa.UniqueConstraint("org_id", "idempotency_key", name="uq_memory_org_idempotency"),
        sa.Index("ix_memory_owner_created", "org_id", "user_id", "created_at"),
        sa.Index("ix_memory_org_scope_created", "org_id", "scope", "created_at"),
        sa.Index("ix_memory_org_keypath", "org_id", "keypath"),
    )

    pk: int | None = Field(default=None, primary_key=True, sa_type=SurrogateKey)
    id: str = Field(default_factory=new_id, sa_type=IdType, unique=True)
    org_id: str = Field(max_length=128)
    user_id: str = Field(max_length=128)
    agent_id: str | None = Field(default=None, max_length=128)
    scope: str = Field(default="user", max_length=8)
    project_id: str | None = Field(default=None, max_length=128)
    keypath: str | None = Field(default=None, max_length=255)
    content: str = Field(sa_type=sa.Text)
    source: str | None = Field(default=None, max_length=256)
    category: str = Field(default="fact", max_length=32)
    confidence: float = Field(default=0.6, sa_type=sa.Double)
    tags: list[str] = Field(default_factory=empty_list, sa_type=sa.JSON)
    contexts: list[dict[str, Any]] = Field(default_factory=empty_list, sa_type=sa.JSON)
    #: sha256 hex of the NFC-normalised, stripped content: tells a replayed
    #: Idempotency-Key apart from a reused one.
    content_hash: str = Field(max_length=64)
    idempotency_key: str | None = Field(default=None, max_length=255)
    version: int = 1
    supersedes_id: str | None = Field(default=None, sa_type=IdType, foreign_key="memory.id")
    #: The first version's id, shared by the whole chain: history is one indexed query.
    chain_id: str = Field(sa_type=IdType, index=True)
    superseded_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    deleted_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    #: Derived at insert for search (store.search.indexing): the normalised terms both backends'
    #: full-text indexes read, and the float32 embedding when semantic search is on.
    search_text: str | None = Field(default=None, sa_type=SearchTextType)
    embedding: bytes | None = Field(default=None, sa_type=sa.LargeBinary)


class MemoryRevisionRow(SQLModel, table=True):
    """How many write transactions have changed an organisation's memories: what a replica's
    search postings (``store.search.postings``) compare theirs with before each search.

    Bumped by every transaction that inserts or stamps memory rows, as its last statement
    before COMMIT (``store.search.changes``), so its row lock orders the org's writers by
    commit and the revision numbers their changes in that order.
    """

    __tablename__ = "memory_revision"

    org_id: str = Field(max_length=128, primary_key=True)
    revision: int = Field(default=0, sa_type=sa.BigInteger)


class MemoryChangeRow(SQLModel, table=True):
    """The memory rows one write transaction inserted or stamped (superseded, deleted), by
    the org revision it committed: a replica brings its postings up to date by reading the
    changes after its own revision and those rows, never the owner's other rows. Old
    changes are pruned; a replica further behind than what is kept reloads the owner."""

    __tablename__ = "memory_change"

    org_id: str = Field(max_length=128, primary_key=True)
    revision: int = Field(primary_key=True, sa_type=sa.BigInteger, sa_column_kwargs={"autoincrement": False})
    #: The rows' pks, space-separated.
    pks: str = Field(sa_type=sa.Text)


class TokenRow(SQLModel, table=True):
    """A bearer token, known only by its sha256: a database leak yields no usable token.

    ``prefix`` is the first characters of the secret, kept so that people can tell
    tokens apart in a list (NULL for tokens minted before it was kept). Rotation
    replaces ``token_hash`` and ``prefix`` in place: the id and the grants stay.
    """

    __tablename__ = "token"

    pk: int | None = Field(default=None, primary_key=True, sa_type=SurrogateKey)
    id: str = Field(default_factory=new_id, sa_type=IdType, unique=True)
    token_hash: str = Field(max_length=64, unique=True)
    prefix: str | None = Field(default=None, max_length=16)
    name: str | None = Field(default=None, max_length=128)
    org_id: str = Field(max_length=128)
    user_id: str = Field(max_length=128)
    agent_id: str | None = Field(default=None, max_length=128)
    permissions: list[str] = Field(default_factory=empty_list, sa_type=sa.JSON)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    expires_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    last_used_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    revoked_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class FeedbackRow(SQLModel, table=True):
    __tablename__ = "feedback"

    pk: int | None = Field(default=None, primary_key=True, sa_type=SurrogateKey)
    id: str = Field(default_factory=new_id, sa_type=IdType, unique=True)
    memory_id: str = Field(sa_type=IdType, foreign_key="memory.id", index=True)
    org_id: str = Field(max_length=128)
    user_id: str = Field(max_length=128)
    feedback: str = Field(max_length=16)
    session_id: str | None = Field(default=None, max_length=128)
    trace_id: str | None = Field(default=None, max_length=128)
    notes: str | None = Field(default=None, sa_type=sa.Text)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class AgentRow(SQLModel, table=True):
    """Which agents exist in an org and whether they may still write.

    Agent ids are namespaced by org (the key is ``(org_id, id)``): two orgs may both
    run an agent called ``laptop``, and a lookup outside the caller's org finds nothing,
    so a cross-org agent and a missing one are indistinguishable to the caller. Ids are
    strings of up to 128 characters, like ``memory.agent_id`` and ``token.agent_id``,
    so a name chosen at ``token create --agent`` time can be an id too.
    """

    __tablename__ = "agent"

    org_id: str = Field(max_length=128, primary_key=True)
    id: str = Field(max_length=128, primary_key=True)
    name: str = Field(max_length=128)
    active: bool = True
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class AuditEventRow(SQLModel, table=True):
    """One row per REST call or MCP tool call (DESIGN §6).

    It holds who, what operation, how long and how it ended; never content,
    arguments or tokens, so the audit trail can be kept longer and shown to more
    people than the memories themselves.
    """

    __tablename__ = "audit_event"
    __table_args__ = (sa.Index("ix_audit_event_org_requested", "org_id", "requested_at"),)

    pk: int | None = Field(default=None, primary_key=True, sa_type=SurrogateKey)
    request_id: str | None = Field(default=None, max_length=128)
    #: None for calls refused before a principal was known (401).
    org_id: str | None = Field(default=None, max_length=128)
    agent_id: str | None = Field(default=None, max_length=128)
    tool_name: str = Field(max_length=128)
    latency_ms: float = Field(sa_type=sa.Double)
    success: bool
    error_code: str | None = Field(default=None, max_length=32)
    requested_at: datetime = Field(sa_type=UTCDateTime)
    user_id: str | None = Field(default=None, max_length=128)
    #: The token's public id (``token.id``), never the token or its hash.
    token_id: str | None = Field(default=None, max_length=128)
