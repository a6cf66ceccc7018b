"""Structured logs: JSON lines outside development, one access line per request, joinable with audit events."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from memory_bank.app import create_app
from memory_bank.observability.logging import ACCESS_LOGGER, JsonFormatter, ReadableFormatter, configure_logging
from memory_bank.settings import Profile, Settings
from memory_bank.store.tokens import TokenStore

SECRET_WORDS = "the vault code is swordfish"


def json_lines(stderr: str) -> list[dict]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


def settings_for(profile: Profile, folder: Path) -> Settings:
    return Settings(env=profile, database_url=f"sqlite:///{folder / 'memory-bank.db'}", audit_jsonl_path=folder / "audit.jsonl")


@pytest.fixture
def production(tmp_path: Path) -> Settings:
    return settings_for(Profile.production, tmp_path)


def test_production_logs_one_json_access_line_per_request_joinable_with_its_audit_event(
    production: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    app = create_app(production)
    token, _ = TokenStore(app.state.engine).create("acme", "ann", "bot", ["memory:read", "memory:write"])
    with TestClient(app, headers={"Authorization": f"Bearer {token}"}) as client:
        saved = client.post("/v1/memory", json={"content": SECRET_WORDS}, headers={"X-Request-ID": "req-save-1"})
        searched = client.get("/v1/memory/search", params={"q": "swordfish vault"})
    assert saved.status_code == 201 and searched.status_code == 200
    access = [entry for entry in json_lines(capsys.readouterr().err) if entry["logger"] == ACCESS_LOGGER]

    assert [(e["method"], e["path"], e["status"]) for e in access] == [
        ("POST", "/v1/memory", 201),
        ("GET", "/v1/memory/search", 200),
    ]
    save_line = access[0]
    assert save_line["request_id"] == "req-save-1" == saved.headers["x-request-id"]
    assert save_line["org_id"] == "acme" and save_line["level"] == "info" and save_line["latency_ms"] >= 0
    assert access[1]["request_id"] == searched.headers["x-request-id"]

    audit = [json.loads(line) for line in production.audit_jsonl_path.read_text().splitlines()]
    assert {(e["tool_name"], e["request_id"]) for e in audit} == {
        ("postMemory", "req-save-1"),
        ("getMemorySearch", searched.headers["x-request-id"]),
    }
    logged = json.dumps(access)
    assert token not in logged and "swordfish" not in logged and "vault" not in logged


def test_an_unauthenticated_request_is_logged_without_an_org(production: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    with TestClient(create_app(production)) as client:
        assert client.get("/v1/memory").status_code == 401
    (line,) = [e for e in json_lines(capsys.readouterr().err) if e["logger"] == ACCESS_LOGGER]
    assert (line["status"], line["org_id"]) == (401, None)


def test_development_logs_read_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with TestClient(create_app(settings_for(Profile.development, tmp_path))) as client:
        client.get("/health", headers={"X-Request-ID": "dev-1"})
    (line,) = [line for line in capsys.readouterr().err.splitlines() if ACCESS_LOGGER in line]
    assert "[dev-1] GET /health -> 200 in" in line and not line.startswith("{")


def test_configuring_again_replaces_its_own_handler_and_keeps_others() -> None:
    root = logging.getLogger()
    other = logging.NullHandler()
    root.addHandler(other)
    try:
        configure_logging(Profile.production)
        configure_logging(Profile.development)
        ours = [h for h in root.handlers if isinstance(h.formatter, JsonFormatter | ReadableFormatter)]
        assert len(ours) == 1 and isinstance(ours[0].formatter, ReadableFormatter) and other in root.handlers
    finally:
        root.removeHandler(other)


def test_an_exception_goes_into_the_json_line() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", None, sys.exc_info())
    entry = json.loads(JsonFormatter().format(record))
    assert entry["message"] == "failed" and "ValueError: boom" in entry["exception"]
