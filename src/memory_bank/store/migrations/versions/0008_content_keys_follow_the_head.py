"""A chain's content key moves from its first version to its current one.

Before, a changed memory kept the key of the words it was saved with on version 1: saving
the words it was changed to made a second live memory, and saving the words it no longer
says answered with the superseded version. The store now gives the key to each new version
(``MemoryStore._supersede``); this revision does the same for the chains changed before.
For each live chain whose current version is not its first, the content keys of its older
versions go, and the current version takes the key of its own words unless another memory
holds it (it said them first). Header keys stay where they are, and deleted chains hold no
key already. The key is derived as revision 0004 derives it (frozen there).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import importlib

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

#: Chains moved per round trip.
_BATCH = 500
_CONTENT = "sha256:"
_content_key = importlib.import_module("memory_bank.store.migrations.versions.0004_owner_integrity")._content_key
_MEMORY = sa.table(
    "memory",
    *(sa.column(name) for name in ("pk", "org_id", "user_id", "agent_id", "content", "chain_id", "version", "idempotency_key")),
    sa.column("superseded_at", sa.DateTime()),
    sa.column("deleted_at", sa.DateTime()),
)


def upgrade() -> None:
    connection = op.get_bind()
    memory = _MEMORY.c
    after = 0
    while heads := connection.execute(
        sa.select(memory.pk, memory.org_id, memory.user_id, memory.agent_id, memory.content, memory.chain_id, memory.idempotency_key)
        .where(memory.superseded_at.is_(None), memory.deleted_at.is_(None), memory.version > 1, memory.pk > after)
        .order_by(memory.pk)
        .limit(_BATCH)
    ).all():
        for pk, org_id, user_id, agent_id, content, chain_id, key in heads:
            if key is not None:  # a header key, or already its own: nothing to move
                continue
            connection.execute(
                _MEMORY.update()
                .where(memory.chain_id == chain_id, memory.pk != pk, memory.idempotency_key.startswith(_CONTENT))
                .values(idempotency_key=None)
            )
            wanted = _content_key(org_id, user_id, agent_id, content)
            held = connection.execute(
                sa.select(memory.pk).where(memory.org_id == org_id, memory.idempotency_key == wanted).limit(1)
            ).first()
            if held is None:
                connection.execute(_MEMORY.update().where(memory.pk == pk).values(idempotency_key=wanted))
        after = heads[-1][0]


def downgrade() -> None:
    """Version 1 took its key when it was saved; moving it back would hand replays a superseded
    record again. The keys stay where they are."""
