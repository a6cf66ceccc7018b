"""An MCP tool call as the REST call it dispatches: one token check, one audit event, the same body.

The verified principal rides into the in-process request on the ASGI scope; these
tests also show that nothing an outside request can send (headers, cookies, the key's
own name) puts one there.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.testclient import TestClient

from memory_bank.api.bodies import IN_PROCESS, InProcessCall, in_process_call
from memory_bank.capabilities.execute.outcome import Caller
from memory_bank.store.tables import AuditEventRow
from support.clients import MakeToken
from support.mcp_live import MCP_HEADERS, LiveServer, call_tool, live_server


def audit_rows(app: FastAPI, org: str, count: int) -> list[tuple[str, bool, str | None, str | None]]:
    """The org's audit rows once at least ``count`` are written (the writer is a thread)."""
    statement = (
        sa.select(AuditEventRow.tool_name, AuditEventRow.success, AuditEventRow.error_code, AuditEventRow.agent_id)
        .where(AuditEventRow.org_id == org)
        .order_by(AuditEventRow.pk)
    )
    rows: list[tuple[str, bool, str | None, str | None]] = []
    for _ in range(100):
        with app.state.engine.connect() as connection:
            rows = [(r.tool_name, r.success, r.error_code, r.agent_id) for r in connection.execute(statement)]
        if len(rows) >= count:
            break
        time.sleep(0.05)
    return rows


def test_a_tool_call_verifies_its_token_once(app: FastAPI, make_token: MakeToken, monkeypatch: pytest.MonkeyPatch) -> None:
    token = make_token("org-verify-once", "ann")
    tokens = app.state.tokens
    verify = tokens.verify
    verified: list[str] = []

    def counting(plaintext: str) -> Any:
        verified.append(plaintext)
        return verify(plaintext)

    monkeypatch.setattr(tokens, "verify", counting)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        result = call_tool(client, token, "execute_capability", {"name": "getMemorySearch", "query": {"q": "editor"}})
    assert not result["isError"], result
    assert verified == [token]


def test_one_tool_call_leaves_exactly_one_audit_event(app: FastAPI, make_token: MakeToken) -> None:
    """Whatever the call ends in: a read, a write (with the agent it resolved), a REST failure, a search."""
    org = f"org-{uuid.uuid4().hex[:8]}"
    token = make_token(org, "ann")
    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert not call_tool(client, token, "execute_capability", {"name": "getMemorySearch", "query": {"q": "x"}})["isError"]
        assert not call_tool(client, token, "execute_capability", {"name": "postMemory", "body": {"content": "one event"}})["isError"]
        missing = {"name": "getMemory", "path": {"memory_id": "V1StGXR8_Z5jdHi6B-myT"}}
        assert call_tool(client, token, "execute_capability", missing)["isError"]
        assert not call_tool(client, token, "search_capabilities", {"query": "save a memory"})["isError"]
    # The lifespan is over, so the writer has drained: these are all the rows there will be.
    assert audit_rows(app, org, 4) == [
        ("execute_capability:getMemorySearch", True, None, "agent-1"),
        ("execute_capability:postMemory", True, None, "agent-1"),
        ("execute_capability:getMemory", False, "not_found", "agent-1"),
        ("search_capabilities", True, None, "agent-1"),
    ]


def test_one_tool_call_is_one_access_log_line_and_one_counted_request(
    app: FastAPI, make_token: MakeToken, caplog: pytest.LogCaptureFixture
) -> None:
    """The in-process REST request is part of the ``/mcp`` request: it adds no log line and no request of its own."""
    token = make_token(f"org-{uuid.uuid4().hex[:8]}", "ann")
    with TestClient(app, base_url="http://127.0.0.1") as client, caplog.at_level(logging.INFO, logger="memory_bank.access"):
        assert not call_tool(client, token, "execute_capability", {"name": "getMemorySearch", "query": {"q": "x"}})["isError"]
        metrics = client.get("/metrics").text
    lines = [record.getMessage() for record in caplog.records if record.name == "memory_bank.access"]
    assert [line for line in lines if "/metrics" not in line] == [next(line for line in lines if "POST /mcp -> 200" in line)]
    assert 'operation="getMemorySearch"' not in metrics


def test_the_tool_result_is_the_rest_body(app: FastAPI, make_token: MakeToken) -> None:
    """Structured content is the REST JSON, the text its ``json.dumps`` (non-ASCII kept), as before the reply was handed over."""
    token = make_token("org-same-body", "ann")
    with TestClient(app, base_url="http://127.0.0.1") as client:
        saved = client.post("/v1/memory", json={"content": "café ☕ 日本 notes", "tags": ["notes"]}, headers={"Authorization": f"Bearer {token}"})
        assert saved.status_code == 201, saved.text
        for arguments, path, params in [
            ({"name": "getMemorySearch", "query": {"q": "café", "limit": 5}}, "/v1/memory/search", {"q": "café", "limit": 5}),
            ({"name": "getMemory", "path": {"memory_id": saved.json()["id"]}}, f"/v1/memory/{saved.json()['id']}", {}),
            ({"name": "listMemories", "query": {"tags": ["notes"]}}, "/v1/memory", {"tags": ["notes"]}),
        ]:
            rest = client.get(path, params=params, headers={"Authorization": f"Bearer {token}"})
            assert rest.status_code == 200, rest.text
            result = call_tool(client, token, "execute_capability", arguments)
            assert not result["isError"], result
            assert result["structuredContent"] == rest.json()
            assert result["content"] == [{"type": "text", "text": json.dumps(rest.json(), ensure_ascii=False)}]


def test_a_token_checked_only_at_start_is_checked_again_per_call(app: FastAPI) -> None:
    """stdio verifies its token once, when it starts: each call's REST request verifies it again, so revocation bites."""
    plaintext, record = app.state.tokens.create("org-stdio-revoke", "ann", "agent-1", ["memory:read"])
    caller = Caller(plaintext, app.state.tokens.verify(plaintext), verified_for_call=False)
    toolbox = app.state.mcp_toolbox
    arguments = {"name": "getMemorySearch", "query": {"q": "x"}}
    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert not client.portal.call(toolbox.call, "execute_capability", arguments, caller).is_error
        app.state.tokens.revoke(record.id)
        outcome = client.portal.call(toolbox.call, "execute_capability", arguments, caller)
    assert outcome.error_code == "unauthorized"


def test_only_an_in_process_call_object_counts() -> None:
    assert in_process_call({"type": "http", IN_PROCESS: "forged"}) is None
    assert in_process_call({"type": "http", IN_PROCESS: {"principal": "forged"}}) is None
    call = InProcessCall(None)
    assert in_process_call({"type": "http", IN_PROCESS: call}) is call


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(tmp_path_factory.mktemp("mcp-dispatch")) as live:
        yield live


#: Everything a client could send that names the scope key or a principal.
FORGED = {
    IN_PROCESS: "1",
    IN_PROCESS.replace(".", "-"): "1",
    IN_PROCESS.replace(".", "_"): "1",
    "X-Principal": json.dumps({"org_id": "org-victim", "user_id": "ann", "permissions": ["memory:read"]}),
    "X-Forwarded-User": "ann",
    "Cookie": f"{IN_PROCESS}=1; principal=org-victim",
}


def test_an_outside_request_cannot_bring_a_principal(server: LiveServer) -> None:
    """Over a real socket: without a valid bearer token every forged name is still a 401, and still audited."""
    org = f"org-{uuid.uuid4().hex[:8]}"
    victim = server.token(org)
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert http.post("/v1/memory", json={"content": "secret"}, headers={"Authorization": f"Bearer {victim}"}).status_code == 201
        for name, value in FORGED.items():
            for authorization in ({}, {"Authorization": "Bearer mb_not-a-token"}):
                response = http.get("/v1/memory/search", params={"q": "secret"}, headers={name: value, **authorization})
                assert response.status_code == 401, (name, response.text)
                assert response.json()["code"] == "unauthorized"
        # A real token with every forged name: its own (empty) results, audited as a REST call as usual.
        stranger_org = f"org-{uuid.uuid4().hex[:8]}"
        stranger = server.token(stranger_org)
        seen = http.get("/v1/memory/search", params={"q": "secret"}, headers={**FORGED, "Authorization": f"Bearer {stranger}"})
        assert seen.status_code == 200 and seen.json()["results"] == []
    assert audit_rows(server.app, stranger_org, 1) == [("getMemorySearch", True, None, "agent-1")]


TOOL_CALLS = [
    {"name": "execute_capability", "arguments": {"name": "getMemorySearch", "query": {"q": "café"}}},
    {"name": "execute_capability", "arguments": {"name": "getMemory", "path": {"memory_id": "V1StGXR8_Z5jdHi6B-myT"}}},
    {"name": "execute_capability", "arguments": {"name": "getMemory", "path": {"memory_id": 7}}},
    {"name": "execute_capability", "arguments": {"name": "noSuchCapability"}},
    {"name": "search_capabilities", "arguments": {"query": "save a memory", "limit": 2}},
    {"name": "launchRocket", "arguments": {}},
    {"name": "execute_capability", "arguments": "not an object"},
    {"arguments": {}},
]


@pytest.mark.parametrize("version", [None, "2025-06-18", "2025-03-26"])
def test_a_tool_call_answered_in_its_own_task_is_byte_for_byte_the_sdk_answer(
    app: FastAPI, make_token: MakeToken, monkeypatch: pytest.MonkeyPatch, version: str | None
) -> None:
    """``exchange`` skips the SDK's per-request session; what the client receives stays exactly what the SDK sends."""
    import memory_bank.mcp.http as mcp_http

    token = make_token("org-exchange", "ann")
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}", **({"MCP-Protocol-Version": version} if version else {})}

    def answers(client: TestClient) -> list[tuple[int, str | None, bytes]]:
        seen = []
        for n, params in enumerate(TOOL_CALLS):
            message = {"jsonrpc": "2.0", "id": n if n % 2 else f"call-{n}", "method": "tools/call", "params": params}
            response = client.post("/mcp", json=message, headers={**headers, "X-Request-ID": f"exchange-{n}"})
            seen.append((response.status_code, response.headers.get("content-type"), response.content))
        return seen

    with TestClient(app, base_url="http://127.0.0.1") as client:
        saved = client.post("/v1/memory", json={"content": "café notes"}, headers={"Authorization": f"Bearer {token}"})
        assert saved.status_code == 201
        here = answers(client)
        with monkeypatch.context() as patched:
            patched.setattr(mcp_http, "answered_here", lambda message, request: None)
            by_the_sdk = answers(client)
    assert here == by_the_sdk


async def test_a_modern_tool_call_is_charged_once(server: LiveServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over the 2026-07-28 protocol (the SDK client's default) too: the SDK checks the call's headers against
    the tool's schema without running (and charging) a tools/list first."""
    limiter = server.app.state.mcp_toolbox._limiter
    admit = limiter.admit
    charged: list[str] = []

    async def counting(org_id: str) -> None:
        charged.append(org_id)
        await admit(org_id)

    monkeypatch.setattr(limiter, "admit", counting)
    arguments = {"name": "getMemorySearch", "query": {"q": "x"}}
    async with server.client(server.token()) as client:
        assert client.protocol_version == "2026-07-28"
        await client.call_tool("execute_capability", arguments)  # the client lists the tools once, for their output schemas
        for _ in range(3):
            before = len(charged)
            assert not (await client.call_tool("execute_capability", arguments)).is_error
            assert len(charged) - before == 1
