"""Alembic environment: runs revisions on the connection ``migrations.upgrade`` hands in.

There is no ``alembic.ini`` and no URL here on purpose: the app, the CLI and the
tests all migrate through ``memory_bank.store.migrations.upgrade(engine)``, which
holds the schema lock and owns the transaction, so Alembic must not open its own.
"""

from __future__ import annotations

from alembic import context

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=None)
with context.begin_transaction():
    context.run_migrations()
