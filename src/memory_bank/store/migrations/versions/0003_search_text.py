"""Search columns on memory: ``search_text`` (normalised, stemmed terms) and ``embedding``.

Both are derived data (``store.search.indexing``): they are added empty, and the search
backend's ``install`` fills ``search_text`` for existing rows and rebuilds its
full-text index over it at the next start.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from memory_bank.store.migrations.frozen import long_text

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("memory", sa.Column("search_text", long_text()))
    op.add_column("memory", sa.Column("embedding", sa.LargeBinary()))


def downgrade() -> None:
    op.drop_column("memory", "embedding")
    op.drop_column("memory", "search_text")
