"""Audit events: one per REST call and per MCP tool call, written off the request path.

A request only puts a small ``AuditEvent`` on a bounded queue; a writer thread
drains it in batches, as plain rows, into the ``audit_event`` table (``store.audit``,
the only SQL of the trail) and, when configured, a JSON lines file. A full queue drops the event
and counts it rather than slowing or failing the request: the audit trail must never
become the outage. A thread, not an asyncio task, so that any caller (the event loop,
a worker thread, the stdio MCP transport) can record, whatever loop it runs on. ``stop()`` drains what is queued,
so a clean shutdown loses nothing.

Events carry ids, the operation, timing and outcome only: never content,
arguments or tokens. The token appears by its id (``token_id``), which names it for
``token revoke`` but cannot be used to authenticate.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from memory_bank.observability.metrics import Metrics
from memory_bank.settings import Settings

log = logging.getLogger(__name__)

#: A failing sink gets this many tries per batch, this far apart, before the batch is dropped:
#: enough to ride out a lock wait or a database failover, short enough to keep draining.
SINK_ATTEMPTS = 3
SINK_RETRY_SECONDS = 0.2
#: How often an idle writer wakes to notice a stop request.
IDLE_POLL_SECONDS = 0.1
#: After the first event of a batch, how long the writer waits for more. Under load one
#: write transaction then carries many events instead of one each, and on SQLite each
#: of those transactions also queued behind the requests' own writes.
BATCH_LINGER_SECONDS = 0.05


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """Exactly the audited fields; ``tool_name`` is the operationId or the MCP tool name."""

    request_id: str | None
    org_id: str | None
    agent_id: str | None
    tool_name: str
    latency_ms: float
    success: bool
    error_code: str | None
    requested_at: datetime
    user_id: str | None
    #: The token's public id, never the token.
    token_id: str | None


class AuditSink(Protocol):
    """Takes a batch as rows (``AuditEvent`` fields by name), so the table sink needs no type of ours."""

    def write(self, rows: Sequence[Mapping[str, object]]) -> None: ...


class JsonlSink:
    """Appends one JSON object per line and fsyncs per batch, for log shippers."""

    def __init__(self, path: Path) -> None:
        self._path = path

    def write(self, rows: Sequence[Mapping[str, object]]) -> None:
        lines = "".join(json.dumps(row, default=datetime.isoformat) + "\n" for row in rows)
        with self._path.open("a", encoding="utf-8") as file:
            file.write(lines)
            file.flush()
            os.fsync(file.fileno())


class AuditLog:
    def __init__(self, sinks: Sequence[AuditSink], metrics: Metrics, *, queue_size: int, batch_size: int) -> None:
        self._sinks = tuple(sinks)
        self._metrics = metrics
        self._batch_size = batch_size
        self._queue: queue.Queue[AuditEvent] = queue.Queue(maxsize=queue_size)
        self._stopping = threading.Event()
        self._writer: threading.Thread | None = None
        self._lifespans = 0
        self._lifespans_lock = threading.Lock()
        metrics.watch_audit_queue(self._queue.qsize)

    @classmethod
    def from_settings(cls, settings: Settings, table: AuditSink, metrics: Metrics) -> AuditLog:
        """Events go to ``table`` (``store.audit.TableSink``) and, when configured, a JSON lines file."""
        sinks: list[AuditSink] = [table]
        if settings.audit_jsonl_path is not None:
            sinks.append(JsonlSink(settings.audit_jsonl_path))
        return cls(sinks, metrics, queue_size=settings.audit_queue_size, batch_size=settings.audit_batch_size)

    def record(self, event: AuditEvent) -> None:
        """Queue ``event`` without blocking; when the queue is full it is dropped and counted."""
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self._metrics.audit_dropped.labels("queue_full").inc()

    @contextmanager
    def running(self) -> Iterator[None]:
        """Write events while the block runs (the app's lifespan); drain the queue on exit.

        Lifespans of one app can overlap (in-process clients each open one), so the
        writer starts with the first and drains and stops with the last.
        """
        with self._lifespans_lock:
            self._lifespans += 1
            if self._writer is None:
                self._stopping.clear()
                self._writer = threading.Thread(target=self._drain, name="audit-writer", daemon=True)
                self._writer.start()
        try:
            yield
        finally:
            with self._lifespans_lock:
                self._lifespans -= 1
                if self._lifespans == 0 and self._writer is not None:
                    self._stopping.set()
                    self._writer.join()
                    self._writer = None

    def _drain(self) -> None:
        while True:
            try:
                batch = [self._queue.get(timeout=IDLE_POLL_SECONDS)]
            except queue.Empty:
                if self._stopping.is_set():
                    return
                continue
            deadline = time.monotonic() + BATCH_LINGER_SECONDS
            while len(batch) < self._batch_size:
                try:
                    batch.append(self._queue.get(timeout=max(0.0, deadline - time.monotonic())))
                except queue.Empty:
                    break
            rows = [asdict(event) for event in batch]
            for sink in self._sinks:
                self._write(sink, rows)

    def _write(self, sink: AuditSink, batch: Sequence[Mapping[str, object]]) -> None:
        for attempt in range(1, SINK_ATTEMPTS + 1):
            try:
                sink.write(batch)
                return
            except Exception:
                if attempt == SINK_ATTEMPTS:
                    log.exception("audit sink %s failed; dropping %d events", type(sink).__name__, len(batch))
                    self._metrics.audit_dropped.labels("sink_failed").inc(len(batch))
                    return
                time.sleep(SINK_RETRY_SECONDS)


# -- which agent a call acted as ------------------------------------------------------

@dataclass
class Attribution:
    """Filled in deeper in the stack than the audit hook sits (the agent is resolved in a
    handler); a mutable object in a context variable reaches back up through copied
    contexts, worker threads and tasks alike."""

    agent_id: str | None = None


_attribution: ContextVar[Attribution | None] = ContextVar("memory_bank_audit_attribution", default=None)


@contextmanager
def attributing() -> Iterator[Attribution]:
    """Collect attributions made while the block runs (around one call)."""
    attribution = Attribution()
    token = _attribution.set(attribution)
    try:
        yield attribution
    finally:
        _attribution.reset(token)


def attribute_agent(agent_id: str) -> None:
    """Name the agent the current call acts as; a no-op outside ``attributing()``."""
    attribution = _attribution.get()
    if attribution is not None:
        attribution.agent_id = agent_id
