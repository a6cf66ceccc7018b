"""Org revisions and the change log that keep each replica's search postings in step.

Both tables start empty: an org with no revision row is at revision 0, and a replica
loads an owner's postings whole on its first search, so existing data needs no backfill.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "memory_revision",
        sa.Column("org_id", sa.String(128), primary_key=True),
        sa.Column("revision", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "memory_change",
        sa.Column("org_id", sa.String(128), primary_key=True),
        sa.Column("revision", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("pks", sa.Text(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("memory_change")
    op.drop_table("memory_revision")
