"""The audit trail's table sink: batches of rows from ``observability.audit`` written to ``audit_event``.

Only the SQL lives here; the queue, batching and retries stay with the audit log,
which also feeds sinks that are not the database. The sink takes plain rows (one
mapping of column to value per event), so the store imports nothing of observability,
which sits above it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from memory_bank.store.database import transaction
from memory_bank.store.tables import AuditEventRow


class TableSink:
    """One multi-row INSERT per batch into ``audit_event``."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def write(self, rows: Sequence[Mapping[str, object]]) -> None:
        with transaction(self._engine, write=True) as session:
            session.execute(sa.insert(AuditEventRow), rows)
