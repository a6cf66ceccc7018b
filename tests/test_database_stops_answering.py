"""A database that stops answering (a partition, not a refusal) costs a request a bounded wait, then 503.

A private MariaDB is frozen (SIGSTOP): its connections stay open and nothing comes back, so
without a read timeout every request, ``/ready`` included, waited for good. With
``database_timeout_seconds`` each waits at most a few timeouts and gets a problem document;
``/ready`` answers within its own deadline; once the server thaws, the pool's dead connections are replaced and requests succeed again.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from fastapi.testclient import TestClient

from memory_bank.app import create_app
from memory_bank.observability.probes import READY_DEADLINE_SECONDS
from memory_bank.settings import Settings
from support.private_mariadb import private_mariadb
from support.requirements import mysql_driver

mysql_driver()

TIMEOUT_SECONDS = 2
#: A request may meet the timeout a few times (the pool's ping, a reconnect, the statement).
BOUND_SECONDS = 6 * TIMEOUT_SECONDS


def test_a_frozen_database_answers_503_within_a_bound_and_recovers(tmp_path: Path) -> None:
    with private_mariadb(tmp_path) as database:
        app = create_app(Settings(database_url=database.url, database_timeout_seconds=TIMEOUT_SECONDS))
        token = app.state.tokens.create("acme", "ann", "agent-1", ["memory:read", "memory:write"])[0]
        auth = {"Authorization": f"Bearer {token}"}
        with TestClient(app, headers=auth) as client:
            assert client.post("/v1/memory", json={"content": "before the partition"}).status_code == 201
            database.freeze()
            watchdog = threading.Timer(3 * BOUND_SECONDS, database.thaw)  # unbounded, the test would hang, not fail
            watchdog.start()
            try:
                started = time.monotonic()
                with ThreadPoolExecutor(4) as pool:
                    answers = list(pool.map(lambda path: client.get(path), ["/v1/memory", "/v1/memory/search?q=partition", "/ready", "/v1/memory"]))
                waited = time.monotonic() - started
                started = time.monotonic()
                ready = client.get("/ready")
                ready_waited = time.monotonic() - started
            finally:
                watchdog.cancel()
                database.thaw()
            after = client.get("/v1/memory/search", params={"q": "partition"})
        app.state.engine.dispose()
    assert [a.status_code for a in answers] == [503, 503, 503, 503], [a.text for a in answers]
    assert all(a.headers["content-type"].startswith("application/problem+json") for a in answers)
    assert {a.json()["code"] for a in answers} == {"backend_unavailable"}
    assert waited < BOUND_SECONDS, waited
    assert ready.status_code == 503 and ready.json()["checks"] == {"database": "unreachable"}
    assert ready_waited < READY_DEADLINE_SECONDS + 1, ready_waited  # a load balancer's probe is not kept waiting
    assert after.status_code == 200 and [r["content"] for r in after.json()["results"]] == ["before the partition"]
