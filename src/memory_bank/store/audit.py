"""The audit trail's table sink: batches from ``observability.audit`` written to ``audit_event``.

Only the SQL lives here; the queue, batching and retries stay with the audit log,
which also feeds sinks that are not the database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from memory_bank.observability.audit import AuditEvent
from memory_bank.store.database import transaction
from memory_bank.store.tables import AuditEventRow


class TableSink:
    """One multi-row INSERT per batch into ``audit_event``."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def write(self, events: Sequence[AuditEvent]) -> None:
        with transaction(self._engine, write=True) as session:
            session.execute(sa.insert(AuditEventRow), [asdict(event) for event in events])
