"""HEAD is served wherever GET is (RFC 9110 §9.3.2): the same status and headers, no body.

FastAPI routes answered HEAD with 405, so a client checking a URL before fetching it, or
a monitor that probes with HEAD, was told the resource had no GET. Every GET route of the
app (the spec's operations, the service routes, the docs pages and their files, the
``/.well-known`` documents) is swept, and a new one is caught by the completeness check.
HEAD is a GET whose body is dropped, so it is authenticated and charged like one.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from starlette.routing import BaseRoute, Mount, Route

from memory_bank.app import create_app
from memory_bank.security.tokens import PERMISSIONS
from memory_bank.settings import Settings
from memory_bank.store.tokens import TokenStore
from support.clients import MakeToken
from support.mcp_live import live_server
from support.spec_queries import operations

SERVICE_PATHS = ["/", "/health", "/ready", "/metrics", "/openapi.json", "/docs", "/redoc", "/capabilities"]
WELL_KNOWN = ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]
ASSETS = ["/docs/assets/vendor/swagger-ui.css", "/docs/assets/vendor/redoc.standalone.js"]
SPEC_GETS = [path for _, method, path, _ in operations() if method == "GET"]
EVERY_GET = [*SPEC_GETS, *SERVICE_PATHS, *WELL_KNOWN, *ASSETS]
#: Headers that say when or which request, not what was answered.
PER_REQUEST = {"date", "x-request-id"}


def _paths(routes: list[BaseRoute]) -> Iterator[str]:
    """The path of every route that serves GET, through included routers (mounts are swept by their files)."""
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from _paths(included.routes)
        elif isinstance(route, APIRoute | Route) and "GET" in (route.methods or ()):
            yield route.path


@pytest.fixture
def settings(database_url: str) -> Settings:
    """A budget the sweep does not spend; the charging test sets its own."""
    return Settings(database_url=database_url, rate_limit_rpm=10_000)


@pytest.fixture
def bearer(make_token: MakeToken) -> dict[str, str]:
    return {"Authorization": f"Bearer {make_token('acme', 'ann', PERMISSIONS)}", "X-Request-ID": "head-check"}


def same_answer(get: Any, head: Any, path: str) -> None:
    assert head.status_code == get.status_code, (path, head.status_code, get.status_code)
    assert head.content == b"", path
    varying = PER_REQUEST | ({"content-length"} if path == "/metrics" else set())  # its counters move between calls
    assert {k: v for k, v in head.headers.items() if k not in varying} == {
        k: v for k, v in get.headers.items() if k not in varying
    }, path


def test_the_sweep_covers_every_get_route(app: FastAPI) -> None:
    templates = {path for _, method, path, _ in operations() if method == "GET"}
    swept = {p for p in _paths(app.router.routes) if not p.startswith("/v1/")}
    assert swept == set(SERVICE_PATHS) | set(WELL_KNOWN)
    assert {p for p in _paths(app.router.routes) if p.startswith("/v1/")} and templates
    assert all(isinstance(r, Mount) for r in app.router.routes if getattr(r, "path", "").startswith("/docs/assets"))


@pytest.mark.parametrize("path", EVERY_GET)
def test_head_answers_as_get_without_a_body(client: TestClient, bearer: dict[str, str], path: str) -> None:
    get = client.get(path, headers=bearer, follow_redirects=False)
    head = client.head(path, headers=bearer, follow_redirects=False)
    same_answer(get, head, path)


@pytest.mark.parametrize("path", [p for p in SPEC_GETS])
def test_head_without_a_token_is_401_as_get_is(client: TestClient, path: str) -> None:
    get = client.get(path, headers={"X-Request-ID": "head-check"})
    head = client.head(path, headers={"X-Request-ID": "head-check"})
    assert get.status_code == 401 and "www-authenticate" in head.headers
    same_answer(get, head, path)


def test_head_of_an_export_sends_no_line(client: TestClient, bearer: dict[str, str]) -> None:
    client.post("/v1/memory", json={"content": "a fact to export"}, headers=bearer)
    head = client.head("/v1/memory/export", headers=bearer)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-type"].startswith("application/x-ndjson")


def test_a_path_without_get_is_still_405_and_allow_names_head_beside_get(
    app: FastAPI, client: TestClient, bearer: dict[str, str]
) -> None:
    feedback = f"/v1/memory/{'A' * 21}/feedback"
    refused = client.head(feedback, headers=bearer)
    assert refused.status_code == 405 and refused.headers["allow"] == "POST" and refused.content == b""
    same_answer(client.get(feedback, headers=bearer), refused, feedback)
    with TestClient(app, base_url="http://127.0.0.1:8000") as local:  # a name /mcp serves in development
        mcp = local.head("/mcp", headers=bearer)
    assert mcp.status_code == 405 and mcp.headers["allow"] == "POST"
    assert client.post("/v1/capabilities", headers=bearer).headers["allow"] == "GET, HEAD"
    assert client.put("/v1/memory", headers=bearer).headers["allow"] == "GET, HEAD, POST"


def test_head_is_charged_like_get(database_url: str) -> None:
    """Answering HEAD costs what answering GET does (the GET runs), so it counts against the budget."""
    app = create_app(Settings(database_url=database_url, rate_limit_rpm=3), clock=lambda: 1_800_000_000.0)
    token = {"Authorization": f"Bearer {TokenStore(app.state.engine).create('acme', 'ann', 'agent-1', PERMISSIONS)[0]}"}
    try:
        with TestClient(app) as client:
            answers = [client.head("/v1/memory", headers=token).status_code for _ in range(3)]
            after = client.get("/v1/memory", headers=token)
            refused_head = client.head("/v1/memory", headers=token)
    finally:
        app.state.engine.dispose()
    assert answers == [200, 200, 200]
    assert after.status_code == 429 and after.json()["code"] == "rate_limited"
    assert refused_head.status_code == 429 and refused_head.content == b"" and "retry-after" in refused_head.headers


def test_the_access_log_names_the_method_that_came(client: TestClient, bearer: dict[str, str], caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger="memory_bank.access"):
        client.head("/v1/memory", headers=bearer)
    assert [r.getMessage().split(" -> ")[0] for r in caplog.records if r.name == "memory_bank.access"] == ["HEAD /v1/memory"]


def test_a_real_server_answers_head_and_keeps_the_connection(tmp_path: Path) -> None:
    """Over uvicorn: the GET's Content-Length with no bytes after it, and the next request on the
    same connection is answered (a body sent after a HEAD answer would be read as the next response)."""
    with live_server(tmp_path) as server:
        headers = {"Authorization": f"Bearer {server.token()}"}
        with httpx.Client(base_url=server.url, headers=headers, timeout=5) as http:
            get = http.get("/v1/capabilities")
            head = http.head("/v1/capabilities")
            after = http.get("/health")
            export = http.head("/v1/memory/export")
            last = http.get("/health")
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == get.headers["content-length"] == str(len(get.content))
    assert export.status_code == 200 and export.content == b""
    assert after.json() == last.json() == {"status": "ok"}


def test_head_of_an_export_ends_with_its_head_and_is_logged_whole(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """``curl -I`` closes once it has the head; the export streamed on, was cut, and its access line
    said ERROR "aborted before the response was complete" (a new user's pass)."""
    with caplog.at_level("INFO", logger="memory_bank.access"), live_server(tmp_path) as server:
        token = server.token()
        for n in range(50):
            httpx.post(f"{server.url}/v1/memory", json={"content": f"fact {n} to export"}, headers={"Authorization": f"Bearer {token}"})
        host, port = server.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=5) as connection:
            connection.sendall(f"HEAD /v1/memory/export HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
            assert connection.recv(65536).startswith(b"HTTP/1.1 200")
        time.sleep(0.5)
    lines = [(r.levelname, r.getMessage()) for r in caplog.records if r.getMessage().startswith("HEAD /v1/memory/export")]
    assert len(lines) == 1 and lines[0][0] == "INFO" and "aborted" not in lines[0][1], lines
