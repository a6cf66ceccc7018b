"""When the database dies mid-write, the logs carry ids, codes and timings, never content, SQL or token hashes.

A private MariaDB is killed (SIGKILL) while writers save a secret; every request
still gets a problem+json answer (no dropped connection, no bare 500), and nothing
the app logged, in the production JSON format, contains the secret, a statement or
the token's hash.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from memory_bank.app import create_app
from memory_bank.settings import Profile, Settings
from support.private_mariadb import private_mariadb
from support.requirements import mysql_driver

MySQLdb = mysql_driver()

SECRET = "the vault combination is 31-17-42 swordfish"
SECRET_KEYPATH = "vault.combination.swordfish"
WRITERS = 4
LEAKS = ("[SQL", "INSERT INTO", "SELECT ", "UPDATE ", "[parameters", "31-17-42", "swordfish")


def test_killing_the_database_mid_write_logs_no_content_sql_or_hashes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with private_mariadb(tmp_path) as database:
        app = create_app(Settings(env=Profile.production, database_url=database.url, rate_limit_rpm=100_000))
        token = app.state.tokens.create("acme", "ann", "agent-1", ["memory:read", "memory:write"])[0]
        token_hash = hashlib.sha256(token.encode()).hexdigest()
        saved: list[int] = []
        answers: list[tuple[int, str]] = []
        stop = threading.Event()

        def write(n: int) -> None:
            client = TestClient(app, headers={"Authorization": f"Bearer {token}"})
            k = 0
            while not stop.is_set() and k < 400:
                k += 1
                response = client.post("/v1/memory", json={"content": f"{SECRET} #{n}.{k}", "keypath": f"{SECRET_KEYPATH}.{n}.{k}"})
                answers.append((response.status_code, response.headers.get("content-type", "")))
                if response.status_code == 201:
                    saved.append(n)

        with TestClient(app):
            threads = [threading.Thread(target=write, args=(n,)) for n in range(WRITERS)]
            for thread in threads:
                thread.start()
            deadline = time.monotonic() + 60
            while len(saved) < 10 and time.monotonic() < deadline:
                time.sleep(0.01)
            database.kill()  # writers are mid-request: some statements are in flight
            time.sleep(1.0)
            stop.set()
            for thread in threads:
                thread.join(timeout=120)
            with TestClient(app, headers={"Authorization": f"Bearer {token}"}) as client:  # the auth lookup fails too
                after = [client.get("/v1/memory"), client.put(f"/v1/memory/keypaths/{SECRET_KEYPATH}", json={"content": SECRET})]
        app.state.engine.dispose()

    assert len(saved) >= 10, "the writers never got going"
    failures = [(status, kind) for status, kind in answers if status >= 400] + [
        (r.status_code, r.headers["content-type"]) for r in after
    ]
    assert failures, "the kill did not reach a request"
    assert all(status == 503 and kind.startswith("application/problem+json") for status, kind in failures), failures
    assert all(r.json()["code"] == "backend_unavailable" for r in after)

    logs = capsys.readouterr().err
    entries = [json.loads(line) for line in logs.splitlines() if line.startswith("{")]
    assert any(e["level"] in ("warning", "error") for e in entries), "nothing logged the failure"
    for leaked in (*LEAKS, token, token_hash):
        assert leaked not in logs, f"{leaked!r} in the logs"


def test_any_logged_exception_shows_its_type_code_and_frames_but_not_its_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A driver's own message can quote a value (MySQL: "Duplicate entry '<keypath>'"); so can any exception."""
    create_app(Settings(env=Profile.production, database_url=f"sqlite:///{tmp_path / 'x.db'}"))  # configures logging
    log = logging.getLogger("memory_bank.test")
    driver = MySQLdb.IntegrityError(1062, f"Duplicate entry 'acme-ann-{SECRET_KEYPATH}' for key 'uq'")
    statement, context = LEAKS[1] + " memory (content) VALUES (%s)", f"while saving {SECRET}"
    try:
        try:
            raise sa.exc.IntegrityError(statement, (SECRET,), driver)
        except sa.exc.IntegrityError as exc:
            raise RuntimeError(context) from exc
    except RuntimeError as exc:
        log.exception("save failed")
        log.warning("again: %s", exc)
    entries = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    logged = json.dumps(entries)
    assert "sqlalchemy.exc.IntegrityError (1062)" in entries[0]["exception"]
    assert "builtins.RuntimeError" in entries[0]["exception"] and "test_database_failure_logs.py" in entries[0]["exception"]
    assert entries[1]["message"] == "again: builtins.RuntimeError"
    for leaked in LEAKS:
        assert leaked not in logged
