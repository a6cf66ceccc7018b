"""One current value per owner and keypath; audit events name the user and token; unambiguous content keys.

* ``uq_memory_current_keypath``: at most one current (neither superseded nor deleted)
  row per (org, user, keypath). SQLite has partial indexes; MariaDB/MySQL have none,
  so there the unique key is on a generated column that holds the keypath only while
  the row is current (NULLs never collide). Existing duplicates, left by PUTs that
  raced before this key existed, are resolved first: the newest stays current, the
  others are stamped superseded, so nothing is lost (history and
  ``include_superseded`` still show them).
* ``audit_event.user_id`` and ``token_id``: which user and which token (its id, never
  the token) made the call.
* Content-derived idempotency keys are re-derived from the JSON-array encoding, so a
  save repeated after the upgrade still finds its first record. Header-derived keys
  cannot be (the header is not stored): a header replayed across the upgrade saves once more.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

UNIQUE_CURRENT = "uq_memory_current_keypath"
LIVE_COLUMN = "live_keypath"
CHUNK = 500

_memory = sa.table(
    "memory",
    sa.column("pk", sa.BigInteger()),
    sa.column("org_id", sa.String()),
    sa.column("user_id", sa.String()),
    sa.column("agent_id", sa.String()),
    sa.column("keypath", sa.String()),
    sa.column("content", sa.Text()),
    sa.column("idempotency_key", sa.String()),
    sa.column("superseded_at", sa.DateTime()),
    sa.column("deleted_at", sa.DateTime()),
    sa.column("created_at", sa.DateTime()),
    sa.column("updated_at", sa.DateTime()),
)


def _content_key(org_id: str, user_id: str, agent_id: str | None, content: str) -> str:
    """``idempotency.content_key`` as of this revision, frozen here."""
    words = unicodedata.normalize("NFC", content).strip()
    encoded = json.dumps([org_id, user_id, agent_id, words], ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(encoded.encode("utf-8")).hexdigest()


def _supersede_duplicate_current_values(connection: sa.Connection) -> None:
    older, newer = _memory.alias("older"), _memory.alias("newer")
    live = sa.and_(older.c.superseded_at.is_(None), older.c.deleted_at.is_(None), older.c.keypath.is_not(None))
    losers = sa.select(older.c.pk).where(
        live,
        sa.exists().where(
            newer.c.org_id == older.c.org_id,
            newer.c.user_id == older.c.user_id,
            newer.c.keypath == older.c.keypath,
            newer.c.superseded_at.is_(None),
            newer.c.deleted_at.is_(None),
            sa.tuple_(newer.c.created_at, newer.c.pk) > sa.tuple_(older.c.created_at, older.c.pk),
        ),
    )
    pks = list(connection.execute(losers).scalars())
    now = datetime.now(UTC).replace(tzinfo=None)
    for start in range(0, len(pks), CHUNK):
        connection.execute(
            sa.update(_memory).where(_memory.c.pk.in_(pks[start : start + CHUNK])).values(superseded_at=now, updated_at=now)
        )


def _rederive_content_keys(connection: sa.Connection) -> None:
    after = 0
    while True:
        rows = connection.execute(
            sa.select(_memory.c.pk, _memory.c.org_id, _memory.c.user_id, _memory.c.agent_id, _memory.c.content)
            .where(_memory.c.idempotency_key.startswith("sha256:"), _memory.c.pk > after)
            .order_by(_memory.c.pk)
            .limit(CHUNK)
        ).all()
        if not rows:
            return
        for row in rows:
            key = _content_key(row.org_id, row.user_id, row.agent_id, row.content)
            connection.execute(sa.update(_memory).where(_memory.c.pk == row.pk).values(idempotency_key=key))
        after = rows[-1].pk


def upgrade() -> None:
    connection = op.get_bind()
    _supersede_duplicate_current_values(connection)
    _rederive_content_keys(connection)
    if connection.dialect.name == "sqlite":
        op.create_index(
            UNIQUE_CURRENT,
            "memory",
            ["org_id", "user_id", "keypath"],
            unique=True,
            sqlite_where=sa.text("keypath IS NOT NULL AND superseded_at IS NULL AND deleted_at IS NULL"),
        )
    else:
        op.execute(
            f"ALTER TABLE memory ADD COLUMN {LIVE_COLUMN} VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
            " AS (CASE WHEN superseded_at IS NULL AND deleted_at IS NULL THEN keypath END) VIRTUAL"
        )
        op.create_index(UNIQUE_CURRENT, "memory", ["org_id", "user_id", LIVE_COLUMN], unique=True)
    op.add_column("audit_event", sa.Column("user_id", sa.String(128)))
    op.add_column("audit_event", sa.Column("token_id", sa.String(128)))


def downgrade() -> None:
    op.drop_column("audit_event", "token_id")
    op.drop_column("audit_event", "user_id")
    op.drop_index(UNIQUE_CURRENT, table_name="memory")
    if op.get_bind().dialect.name != "sqlite":
        op.drop_column("memory", LIVE_COLUMN)
