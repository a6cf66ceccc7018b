"""Agents (org, active) and audit events (DESIGN §5–§6).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from memory_bank.store.migrations.frozen import MYSQL_TABLE, moment, surrogate_key

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "agent",
        sa.Column("org_id", sa.String(128), primary_key=True),
        sa.Column("id", sa.String(128), primary_key=True),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("created_at", moment(), nullable=False),
        **MYSQL_TABLE,
    )
    op.create_table(
        "audit_event",
        surrogate_key(),
        sa.Column("request_id", sa.String(128)),
        sa.Column("org_id", sa.String(128)),
        sa.Column("agent_id", sa.String(128)),
        sa.Column("tool_name", sa.String(128), nullable=False),
        sa.Column("latency_ms", sa.Double(), nullable=False),
        sa.Column("success", sa.Boolean(), nullable=False),
        sa.Column("error_code", sa.String(32)),
        sa.Column("requested_at", moment(), nullable=False),
        **MYSQL_TABLE,
    )
    op.create_index("ix_audit_event_org_requested", "audit_event", ["org_id", "requested_at"])


def downgrade() -> None:
    op.drop_table("audit_event")
    op.drop_table("agent")
