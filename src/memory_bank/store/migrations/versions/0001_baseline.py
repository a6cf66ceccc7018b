"""Baseline: memory, token and feedback (DESIGN §5); types and collations in ``frozen``.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from memory_bank.store.migrations.frozen import MYSQL_TABLE, id_type, moment, search_text, surrogate_key

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "memory",
        surrogate_key(),
        sa.Column("id", id_type(), nullable=False, unique=True),
        sa.Column("org_id", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("agent_id", sa.String(128)),
        sa.Column("scope", sa.String(8), nullable=False),
        sa.Column("project_id", sa.String(128)),
        sa.Column("keypath", sa.String(255)),
        sa.Column("content", search_text(), nullable=False),
        sa.Column("source", sa.String(256)),
        sa.Column("category", sa.String(32), nullable=False),
        sa.Column("confidence", sa.Double(), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("contexts", sa.JSON(), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("idempotency_key", sa.String(255)),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("supersedes_id", id_type(), sa.ForeignKey("memory.id")),
        sa.Column("chain_id", id_type(), nullable=False),
        sa.Column("superseded_at", moment()),
        sa.Column("deleted_at", moment()),
        sa.Column("created_at", moment(), nullable=False),
        sa.Column("updated_at", moment(), nullable=False),
        sa.UniqueConstraint("org_id", "idempotency_key", name="uq_memory_org_idempotency"),
        **MYSQL_TABLE,
    )
    op.create_index("ix_memory_chain_id", "memory", ["chain_id"])
    op.create_index("ix_memory_org_keypath", "memory", ["org_id", "keypath"])
    op.create_index("ix_memory_org_scope_created", "memory", ["org_id", "scope", "created_at"])
    op.create_index("ix_memory_owner_created", "memory", ["org_id", "user_id", "created_at"])
    op.create_table(
        "token",
        surrogate_key(),
        sa.Column("id", id_type(), nullable=False, unique=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("org_id", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("agent_id", sa.String(128)),
        sa.Column("permissions", sa.JSON(), nullable=False),
        sa.Column("created_at", moment(), nullable=False),
        sa.Column("revoked_at", moment()),
        **MYSQL_TABLE,
    )
    op.create_table(
        "feedback",
        surrogate_key(),
        sa.Column("id", id_type(), nullable=False, unique=True),
        sa.Column("memory_id", id_type(), sa.ForeignKey("memory.id"), nullable=False),
        sa.Column("org_id", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("feedback", sa.String(16), nullable=False),
        sa.Column("session_id", sa.String(128)),
        sa.Column("trace_id", sa.String(128)),
        sa.Column("notes", sa.Text()),
        sa.Column("created_at", moment(), nullable=False),
        **MYSQL_TABLE,
    )
    op.create_index("ix_feedback_memory_id", "feedback", ["memory_id"])


def downgrade() -> None:
    op.drop_table("feedback")
    op.drop_table("token")
    op.drop_table("memory")
