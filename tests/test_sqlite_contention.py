"""Writers contending for one SQLite file wait their turn; a lock that outlasts the wait is "busy", not "unreachable"."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from memory_bank.app import create_app
from memory_bank.settings import Settings
from memory_bank.store.database import SQLITE_BUSY_TIMEOUT_MS
from memory_bank.store.tokens import TokenStore

WRITERS = 24
WRITES_EACH = 5


def test_concurrent_writers_on_one_sqlite_file_all_succeed(tmp_path: Path) -> None:
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'busy.db'}", rate_limit_rpm=100_000))
    tokens = TokenStore(app.state.engine)
    statuses: list[int] = []
    start = threading.Barrier(WRITERS)

    def write(n: int) -> None:
        token = tokens.create("acme", f"user-{n % 4}", "agent-1", ["memory:read", "memory:write"])[0]
        client = TestClient(app, headers={"Authorization": f"Bearer {token}"})
        start.wait()
        for k in range(WRITES_EACH):
            saved = client.post("/v1/memory", json={"content": f"fact {n}.{k}", "tags": ["load"]})
            statuses.append(saved.status_code)
            put = client.put(f"/v1/memory/keypaths/shared.{n % 3}", json={"content": f"value {n}.{k}"})
            statuses.append(put.status_code)
            if saved.status_code == 201:
                statuses.append(client.patch(f"/v1/memory/{saved.json()['id']}", json={"tags": ["done"]}).status_code)

    with TestClient(app):  # the lifespan: the audit writer competes for the file too
        threads = [threading.Thread(target=write, args=(n,)) for n in range(WRITERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    app.state.engine.dispose()

    assert len(statuses) == WRITERS * WRITES_EACH * 3
    assert set(statuses) <= {200, 201}, sorted(statuses)


def test_a_lock_held_past_the_wait_is_reported_busy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memory_bank.store.database.SQLITE_BUSY_TIMEOUT_MS", 200)
    path = tmp_path / "locked.db"
    app = create_app(Settings(database_url=f"sqlite:///{path}"))
    token = TokenStore(app.state.engine).create("acme", "ann", "agent-1", ["memory:read", "memory:write"])[0]
    client = TestClient(app, headers={"Authorization": f"Bearer {token}"})
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holding the write lock
    try:
        response = client.post("/v1/memory", json={"content": "waits, then gives up"})
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert response.status_code == 503
    problem = response.json()
    assert problem["code"] == "backend_unavailable" and "busy" in problem["detail"]
    assert response.headers["retry-after"] == "1"
    assert client.post("/v1/memory", json={"content": "waits, then gives up"}).status_code == 201
    app.state.engine.dispose()


def test_a_read_is_served_when_the_stamp_of_its_tokens_last_use_meets_a_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memory_bank.store.database.SQLITE_BUSY_TIMEOUT_MS", 200)
    path = tmp_path / "locked.db"
    app = create_app(Settings(database_url=f"sqlite:///{path}"))
    tokens = TokenStore(app.state.engine)
    token, row = tokens.create("acme", "ann", "agent-1", ["memory:read"])
    client = TestClient(app, headers={"Authorization": f"Bearer {token}"})
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        response = client.get("/v1/memory")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert response.status_code == 200, response.text
    assert tokens.find(row.id).last_used_at is None  # type: ignore[union-attr]  # not stamped: the next call will be
    assert client.get("/v1/memory").status_code == 200 and tokens.find(row.id).last_used_at is not None  # type: ignore[union-attr]
    app.state.engine.dispose()


def test_a_read_does_not_wait_on_another_process_holding_the_write_lock(tmp_path: Path) -> None:
    """The token's last-use stamp is a write: behind another process's write it waited out the
    busy timeout (5 s) on every read; now it is skipped, and a later read stamps it."""
    path = tmp_path / "held.db"
    app = create_app(Settings(database_url=f"sqlite:///{path}", rate_limit_rpm=100_000))
    tokens = TokenStore(app.state.engine)
    token, row = tokens.create("acme", "ann", "agent-1", ["memory:read"])  # never used: its stamp is due
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process's write, mid-transaction
    try:
        with TestClient(app, headers={"Authorization": f"Bearer {token}"}) as client:
            started = time.monotonic()
            read = client.get("/v1/memory")
            waited = time.monotonic() - started
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert read.status_code == 200
    assert waited < SQLITE_BUSY_TIMEOUT_MS / 1000 / 2, waited
    assert tokens.find(row.id).last_used_at is None  # skipped, not waited for
    assert tokens.verify(token) is not None and tokens.find(row.id).last_used_at is not None
    app.state.engine.dispose()
