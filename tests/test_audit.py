"""Audit events: one per API call with exactly the audited fields, never content or tokens."""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from memory_bank.app import create_app
from memory_bank.observability.audit import AuditEvent, AuditLog
from memory_bank.observability.metrics import Metrics
from memory_bank.settings import Settings
from memory_bank.store.audit import TableSink
from memory_bank.store.database import open_database
from memory_bank.store.tables import AuditEventRow
from memory_bank.store.tokens import TokenStore

AUDITED = [
    "request_id", "org_id", "agent_id", "tool_name", "latency_ms", "success", "error_code", "requested_at", "user_id", "token_id",
]  # fmt: skip
SECRET = "the launch code is swordfish-4471"


def event(n: int = 0) -> AuditEvent:
    return AuditEvent(f"req-{n}", "acme", None, "getMemory", 1.5, True, None, datetime.now(UTC), "ann", "tok-1")


@pytest.fixture
def calls(settings: Settings, tmp_path) -> Iterator[dict[str, object]]:
    """A few real calls through the app; yields what they were, after the lifespan has drained the queue."""
    jsonl = tmp_path / "audit.jsonl"
    app = create_app(settings.model_copy(update={"audit_jsonl_path": jsonl}))
    token, token_row = TokenStore(app.state.engine).create("acme", "ann", "laptop", ["memory:read", "memory:write"])
    auth = {"Authorization": f"Bearer {token}"}
    with TestClient(app) as client:
        saved = client.post("/v1/memory", json={"content": SECRET, "tags": ["ops"]}, headers=auth | {"X-Request-ID": "req-save"})
        searched = client.get("/v1/memory/search", params={"q": "swordfish"}, headers=auth)
        missing = client.get("/v1/memory/AAAAAAAAAAAAAAAAAAAAA", headers=auth)
        anonymous = client.get("/v1/memory")
        client.get("/health")
    yield {"app": app, "token": token, "token_id": token_row.id, "jsonl": jsonl, "responses": [saved, searched, missing, anonymous]}
    app.state.engine.dispose()


def audit_rows(app) -> list[dict[str, object]]:
    with app.state.engine.connect() as connection:
        return [dict(row._mapping) for row in connection.execute(sa.select(AuditEventRow).order_by(AuditEventRow.pk))]


def test_every_api_call_leaves_one_event_with_its_outcome(calls) -> None:
    saved, searched, missing, anonymous = calls["responses"]
    assert [saved.status_code, searched.status_code, missing.status_code, anonymous.status_code] == [201, 200, 404, 401]
    rows = audit_rows(calls["app"])

    assert [(r["tool_name"], r["success"], r["error_code"]) for r in rows] == [
        ("postMemory", True, None),
        ("getMemorySearch", True, None),
        ("getMemory", False, "not_found"),
        ("listMemories", False, "unauthorized"),
    ]  # /health is not an API operation: not audited
    assert [r["request_id"] for r in rows] == [r.headers["x-request-id"] for r in calls["responses"]]
    assert rows[0]["request_id"] == "req-save"
    assert [(r["org_id"], r["agent_id"]) for r in rows] == [("acme", "laptop")] * 3 + [(None, None)]
    # who acted: the user and the token by its id (which revokes it but cannot authenticate)
    assert [(r["user_id"], r["token_id"]) for r in rows] == [("ann", calls["token_id"])] * 3 + [(None, None)]
    now = datetime.now(UTC)
    for row in rows:
        assert 0 < row["latency_ms"] < 10_000
        assert now - timedelta(minutes=1) < row["requested_at"] <= now


def test_events_hold_the_audited_fields_and_no_content_arguments_or_tokens(calls) -> None:
    rows = audit_rows(calls["app"])
    assert [name for name in rows[0] if name != "pk"] == AUDITED
    stored = json.dumps(rows, default=str) + calls["jsonl"].read_text()
    for leaked in (SECRET, "swordfish", "ops", calls["token"], hashlib.sha256(calls["token"].encode()).hexdigest()):
        assert leaked not in stored


def test_the_jsonl_sink_gets_the_same_events(calls) -> None:
    lines = [json.loads(line) for line in calls["jsonl"].read_text().splitlines()]
    assert [list(line) for line in lines] == [AUDITED] * 4
    assert [line["tool_name"] for line in lines] == [r["tool_name"] for r in audit_rows(calls["app"])]
    assert datetime.fromisoformat(lines[0]["requested_at"]).tzinfo is not None


def test_a_full_queue_drops_and_counts_and_the_rest_is_written(engine) -> None:
    metrics = Metrics()
    log = AuditLog([TableSink(engine)], metrics, queue_size=2, batch_size=10)
    for n in range(5):
        log.record(event(n))
    assert metrics.registry.get_sample_value("memory_bank_audit_events_dropped_total", {"reason": "queue_full"}) == 3
    assert metrics.registry.get_sample_value("memory_bank_audit_queue_depth") == 2

    with log.running():
        pass  # leaving drains the queue
    with engine.connect() as connection:
        assert connection.scalars(sa.select(AuditEventRow.request_id)).all() == ["req-0", "req-1"]
    assert metrics.registry.get_sample_value("memory_bank_audit_queue_depth") == 0


def test_events_arriving_one_after_another_share_one_write(engine, monkeypatch) -> None:
    """The writer waits a moment after the first event of a batch, so a burst of requests
    costs one write transaction, not one each (a long wait here, so timing cannot decide)."""
    monkeypatch.setattr("memory_bank.observability.audit.BATCH_LINGER_SECONDS", 1.0)
    table, batches = TableSink(engine), []

    class Counting:
        def write(self, rows: Sequence[Mapping[str, object]]) -> None:
            batches.append(len(rows))
            table.write(rows)

    log = AuditLog([Counting()], Metrics(), queue_size=10, batch_size=10)
    with log.running():
        for n in range(3):
            log.record(event(n))
            time.sleep(0.01)
    assert batches == [3]
    with engine.connect() as connection:
        assert connection.scalars(sa.select(AuditEventRow.request_id)).all() == ["req-0", "req-1", "req-2"]


def test_a_failing_sink_drops_the_batch_counts_it_and_keeps_draining(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("memory_bank.observability.audit.SINK_RETRY_SECONDS", 0.01)
    folder = tmp_path / "gone"
    folder.mkdir()
    engine = open_database(Settings(database_url=f"sqlite:///{folder / 'db.sqlite'}"))
    engine.dispose()
    shutil.rmtree(folder)  # the database can no longer be opened
    metrics = Metrics()
    log = AuditLog([TableSink(engine)], metrics, queue_size=10, batch_size=10)

    with log.running():
        log.record(event())
    assert metrics.registry.get_sample_value("memory_bank_audit_events_dropped_total", {"reason": "sink_failed"}) == 1
    engine.dispose()
