"""Export and import against a real uvicorn server: the streamed byte bound, the free event loop, aborted exports."""

from __future__ import annotations

import json
import logging
import select
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from memory_bank import transfer
from memory_bank.handlers import transfer as import_handler
from memory_bank.handlers.memory import EXPORT_RETRY_AFTER_SECONDS, EXPORTS_AT_ONCE, EXPORTS_PER_ORG
from memory_bank.settings import Settings
from memory_bank.store.database import make_engine
from memory_bank.store.memories import MemoryStore
from memory_bank.store.tables import AuditEventRow
from memory_bank.store.tokens import TokenStore
from support.raw_http import read_response
from support.transfer import live_app

#: The spec's x-max-bytes on importMemories (test_api_transfer pins the route to the spec).
IMPORT_MAX_BYTES = 33_554_432
CHUNK = 1 << 20


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, str, Settings]]:
    """(base url, a read-write token bound to an agent, the settings) of a live server on SQLite."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'memory-bank.db'}")
    with live_app(settings) as (app, url):
        token = TokenStore(app.state.engine).create("acme", "ann", "laptop", ["memory:read", "memory:write"])[0]
        yield url, token, settings


def test_a_chunked_import_is_refused_with_413_as_soon_as_it_passes_the_byte_bound(server) -> None:
    url, token, _ = server
    host, port = url.removeprefix("http://").split(":")
    sent = 0
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(
            f"POST /v1/memory/import HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
            "Content-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
        )
        chunk = f"{CHUNK:x}\r\n".encode() + b"x" * CHUNK + b"\r\n"
        while sent < 4 * IMPORT_MAX_BYTES:  # a server that buffers everything would let all 128 MiB in
            readable, writable, _ = select.select([sock], [sock], [], 10)
            if readable or not writable:
                break
            try:
                sock.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += CHUNK
        sock.settimeout(10)
        response = read_response(sock).decode()
    assert response.startswith("HTTP/1.1 413"), response
    assert '"code":"payload_too_large"' in response
    # Socket buffers on both sides hold a few MiB beyond what the server has read.
    assert IMPORT_MAX_BYTES < sent < IMPORT_MAX_BYTES + 16 * CHUNK


def test_health_answers_while_an_import_is_being_parsed(server, monkeypatch: pytest.MonkeyPatch) -> None:
    url, token, _ = server
    parsing, release = threading.Event(), threading.Event()
    parse = transfer.parse_records

    def slow_parse(body: str, max_lines: int | None) -> list:
        parsing.set()
        release.wait(10)
        return parse(body, max_lines)

    monkeypatch.setattr(import_handler, "parse_records", slow_parse)
    line = '{"id": "AAAAAAAAAAAAAAAAAAAAA", "content": "c", "tags": [], "contexts": [], "scope": "user", '
    line += '"category": "fact", "confidence": 0.5, "version": 1, "created_at": "2024-01-01T00:00:00Z", '
    line += '"updated_at": "2024-01-01T00:00:00Z"}\n'
    outcome: list[int] = []

    def run_import() -> None:
        headers = {"Authorization": f"Bearer {token}"}
        outcome.append(httpx.post(f"{url}/v1/memory/import", content=line, headers=headers, timeout=30).status_code)

    importer = threading.Thread(target=run_import)
    importer.start()
    try:
        assert parsing.wait(10)
        assert httpx.get(f"{url}/health", timeout=3).status_code == 200  # the loop is not held by the parse
    finally:
        release.set()
        importer.join(30)
    assert outcome == [200]


def test_an_export_that_dies_mid_stream_is_logged_and_audited_as_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'memory-bank.db'}")
    monkeypatch.setattr(transfer, "EXPORT_BATCH", 1)
    snapshot = MemoryStore.export_snapshot

    @contextmanager
    def failing_snapshot(self: MemoryStore, principal):  # noqa: ANN001
        with snapshot(self, principal) as page:

            def failing_page(after, size):  # noqa: ANN001
                if after is not None:
                    raise RuntimeError("the database went away")
                return page(after, size)

            yield failing_page

    with live_app(settings) as (app, url):
        token = TokenStore(app.state.engine).create("acme", "ann", "laptop", ["memory:read", "memory:write"])[0]
        headers = {"Authorization": f"Bearer {token}"}
        for content in ("first", "second"):
            assert httpx.post(f"{url}/v1/memory", json={"content": content}, headers=headers).status_code == 201
        monkeypatch.setattr(MemoryStore, "export_snapshot", failing_snapshot)
        with caplog.at_level(logging.INFO, logger="memory_bank.access"):
            with pytest.raises(httpx.RemoteProtocolError):  # the client learns the stream is incomplete
                httpx.get(f"{url}/v1/memory/export", headers=headers, timeout=10)
    engine = make_engine(settings.database_url)
    with engine.connect() as connection:
        rows = connection.execute(sa.select(AuditEventRow.tool_name, AuditEventRow.success, AuditEventRow.error_code)).all()
    engine.dispose()
    assert ("exportMemories", False, "backend_error") in [tuple(r) for r in rows]
    aborted = [r for r in caplog.records if r.name == "memory_bank.access" and "/v1/memory/export" in r.getMessage()]
    assert [r.levelno for r in aborted] == [logging.ERROR] and "aborted" in aborted[0].getMessage()


def test_stalled_exports_take_only_their_share_of_the_pool(tmp_path: Path) -> None:
    """Each export holds a pooled connection while its client reads; 15 clients that stopped reading
    took SQLite's whole pool and every other request got 503. Past EXPORTS_PER_ORG an organisation's
    export is refused (429), past EXPORTS_AT_ONCE anyone's (503), both with Retry-After, and the
    rest of the service answers (a hostile pass: four stalled exports of one caller refused
    everybody's)."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'memory-bank.db'}")
    with live_app(settings) as (app, url):
        tokens = TokenStore(app.state.engine)
        acme, beta, gamma = (tokens.create(org, "ann", "laptop", ["memory:read", "memory:write"])[0] for org in ("acme", "beta", "gamma"))
        stamp = "2026-01-01T00:00:00Z"
        fixed = {"tags": [], "contexts": [], "scope": "user", "category": "fact", "confidence": 0.5, "version": 1, "created_at": stamp, "updated_at": stamp}
        # About 10 MB of export each: more than the kernel's socket buffers (Linux's send buffer grows to
        # 4 MB), so a stalled stream cannot end into them and give its slot back.
        lines = "\n".join(json.dumps({"id": f"{n:021d}", "content": f"row {n} " + "x" * 800} | fixed) for n in range(10_000))
        for token in (acme, beta):
            imported = httpx.post(f"{url}/v1/memory/import", content=lines, headers={"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson"})
            assert imported.status_code == 200
        port = int(url.rsplit(":", 1)[1])

        def export(token: str) -> httpx.Response:
            return httpx.get(f"{url}/v1/memory/export", headers={"Authorization": f"Bearer {token}"}, timeout=30)

        stalled = [_stalled_export(port, acme) for _ in range(EXPORTS_PER_ORG)]
        try:
            own, other = export(acme), export(gamma)
            stalled += [_stalled_export(port, beta) for _ in range(EXPORTS_AT_ONCE - EXPORTS_PER_ORG)]
            refused = export(gamma)
            answers = [httpx.get(f"{url}/v1/memory", headers={"Authorization": f"Bearer {acme}"}, timeout=30) for _ in range(20)]
        finally:
            for sock in stalled:
                sock.close()
        assert own.status_code == 429 and own.headers["retry-after"] == str(EXPORT_RETRY_AFTER_SECONDS)
        assert own.json()["detail"] == f"{EXPORTS_PER_ORG} exports of your organisation are streaming already; retry when one has ended"
        assert other.status_code == 200
        assert refused.status_code == 503 and refused.headers["retry-after"] == str(EXPORT_RETRY_AFTER_SECONDS)
        assert refused.json()["detail"] == f"{EXPORTS_AT_ONCE} exports are streaming on this server already; retry shortly"
        assert {a.status_code for a in answers} == {200}
        for _ in range(50):  # the stalled streams end once their sockets are gone
            if export(acme).status_code == 200:
                break
        else:
            raise AssertionError("exports stayed refused after their readers hung up")


def _stalled_export(port: int, token: str) -> socket.socket:
    """An export whose client reads its first bytes and then stops reading."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(f"GET /v1/memory/export HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    assert sock.recv(64).startswith(b"HTTP/1.1 200")
    return sock
