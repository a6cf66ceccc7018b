"""Token lifecycle: a name, a visible prefix, an expiry and the last use of each token.

All four are nullable, so existing tokens keep working unchanged: no name, no expiry
(they never expire, as before), never seen used. Their prefix stays NULL, since only
the digest of an old token was ever stored; rotating one gives it a prefix.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from memory_bank.store.migrations.frozen import moment

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("token") as batch:
        batch.add_column(sa.Column("prefix", sa.String(16)))
        batch.add_column(sa.Column("name", sa.String(128)))
        batch.add_column(sa.Column("expires_at", moment()))
        batch.add_column(sa.Column("last_used_at", moment()))


def downgrade() -> None:
    with op.batch_alter_table("token") as batch:
        for column in ("last_used_at", "expires_at", "name", "prefix"):
            batch.drop_column(column)
