"""Arguments an agent gets wrong, over MCP against a real server: what it is told, and that it is audited.

A misplaced argument is told where it belongs; a header value no HTTP header can
carry fails the advertised schema at its pointer (it used to crash the in-process
request into an unaudited ``backend_error``); and a call that fails unexpectedly
still reaches the agent as ``backend_error`` with its audit event.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_bank.app import create_app
from memory_bank.capabilities.execute.dispatch import Executor
from memory_bank.capabilities.execute.validation import MOST_FAILURES
from memory_bank.settings import McpToolsMode, Settings
from memory_bank.store.tables import AuditEventRow
from support.clients import MakeToken
from support.mcp_live import LiveServer, call_tool, live_server, post_rpc


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(tmp_path_factory.mktemp("mcp-arguments")) as live:
        yield live


def execute(http: httpx.Client, server: LiveServer, token: str, name: str, **groups: Any) -> tuple[bool, dict[str, Any]]:
    """``(is_error, body)`` of one execute_capability call; a failure's body is its problem."""
    answer = post_rpc(http, server, token, "tools/call", {"name": "execute_capability", "arguments": {"name": name, **groups}})
    result = answer["result"]
    if result.get("isError"):
        assert "structuredContent" not in result
        problem: dict[str, Any] = json.loads(result["content"][0]["text"])
        return True, problem
    return False, result.get("structuredContent") or {}


def audited(server: LiveServer, org: str, count: int) -> list[tuple[str, bool, str | None]]:
    """The org's MCP tool-call audit events, once ``count`` of them are written (the writer is a thread)."""
    statement = sa.select(AuditEventRow).where(AuditEventRow.org_id == org).order_by(AuditEventRow.pk)
    rows: list[tuple[str, bool, str | None]] = []
    for _ in range(100):
        with server.app.state.engine.connect() as connection:
            rows = [(r.tool_name, r.success, r.error_code) for r in connection.execute(statement)]
        rows = [row for row in rows if row[0].startswith("execute_capability")]
        if len(rows) >= count:
            break
        time.sleep(0.05)
    return rows


def test_flat_content_and_a_bare_query_are_told_the_fix(server: LiveServer) -> None:
    with httpx.Client(timeout=30) as http:
        token = server.token()
        _, flat = execute(http, server, token, "postMemory", content="The user edits with Helix")
        _, bare = execute(http, server, token, "getMemorySearch", query="helix editor")
    assert flat["code"] == "invalid_params"
    assert {e["field"]: e["message"] for e in flat["errors"]}["/content"].endswith("did you mean /body/content?")
    assert [e["message"] for e in bare["errors"]] == ['must be of type "object", e.g. {"q": "helix editor"}; got string of 12 characters']


def test_the_nulls_and_empty_groups_strict_clients_fill_unused_fields_with_are_not_sent(server: LiveServer) -> None:
    """Function-calling in strict mode sends every field the schema names: null or {} where it has nothing."""
    with httpx.Client(timeout=30) as http:
        token = server.token()
        unused = {"path": None, "query": None, "header": {"Idempotency-Key": None}}
        body = {"content": "The user reads Le Monde", "source": None, "tags": None, "keypath": None}
        failed, saved = execute(http, server, token, "postMemory", body=body, **unused)
        assert not failed and saved["content"] == "The user reads Le Monde"
        failed, got = execute(http, server, token, "getMemory", path={"memory_id": saved["id"]}, query={}, body={})
        assert not failed and got["id"] == saved["id"]
        failed, found = execute(http, server, token, "getMemorySearch", query={"q": "Le Monde", "category": None, "limit": None})
        assert not failed and [r["id"] for r in found["results"]] == [saved["id"]]
        failed, problem = execute(http, server, token, "postMemory", body={}, path=None)
        assert failed and [e["field"] for e in problem["errors"]] == ["/body/content"]  # an empty group it has is checked
        answer = post_rpc(http, server, token, "tools/call", {"name": "search_capabilities", "arguments": {"query": "save a note", "category": None, "limit": None}})
        unknown = post_rpc(http, server, token, "tools/call", {"name": "search_capabilities", "arguments": {"query": "save a note", "category": "keypaths"}})
    assert not answer["result"].get("isError") and answer["result"]["structuredContent"]["results"]
    assert unknown["result"]["isError"] and "no category is named 'keypaths'; there are " in unknown["result"]["content"][0]["text"]


HEADER_TEXT = st.text(st.characters(codec="utf-8"), min_size=1, max_size=40)


@settings(max_examples=40, deadline=None)
@given(HEADER_TEXT)
def test_any_idempotency_key_is_saved_or_refused_at_its_pointer(server: LiveServer, key: str) -> None:
    sendable = all(" " <= char <= "~" for char in key)
    with httpx.Client(timeout=30) as http:
        is_error, body = execute(
            http, server, server.token(), "postMemory", header={"Idempotency-Key": key}, body={"content": f"keyed {uuid.uuid4()}"}
        )
    if sendable:
        assert not is_error and body["content"].startswith("keyed "), body
    else:
        assert is_error and body["code"] == "invalid_params", body
        assert [(e["field"], e["rule"]) for e in body["errors"]] == [("/header/Idempotency-Key", "pattern")]


@pytest.mark.parametrize("spelling", ["idempotency-key", "IDEMPOTENCY-KEY", "Idempotency-key"])
def test_a_header_is_named_in_any_case_as_http_names_it(server: LiveServer, spelling: str) -> None:
    key, content = f"k-{uuid.uuid4()}", f"keyed in any case {uuid.uuid4()}"
    with httpx.Client(timeout=30) as http:
        token = server.token()
        first = execute(http, server, token, "postMemory", header={spelling: key}, body={"content": content})
        again = execute(http, server, token, "postMemory", header={"Idempotency-Key": key}, body={"content": content})
        other = execute(http, server, token, "postMemory", header={spelling: key}, body={"content": content + " changed"})
    assert not first[0] and not again[0] and first[1]["id"] == again[1]["id"]
    assert other[0] and other[1]["code"] == "conflict", other  # the key was the key, whatever its case


def test_a_header_sent_in_two_cases_is_refused_naming_the_extra_one(server: LiveServer) -> None:
    with httpx.Client(timeout=30) as http:
        is_error, problem = execute(
            http, server, server.token(), "postMemory", header={"Idempotency-Key": "a", "idempotency-key": "b"}, body={"content": "x"}
        )
    assert is_error and problem["code"] == "invalid_params"
    assert [e["field"] for e in problem["errors"]] == ["/header/idempotency-key"]


@pytest.mark.parametrize(("sent", "hint"), [("postMemry", "; did you mean 'postMemory'?"), ("POSTMEMORY", "; did you mean 'postMemory'?"), ("launchRocket", "; search_capabilities lists them")])
def test_a_misspelt_capability_is_offered_the_one_it_misspells(server: LiveServer, sent: str, hint: str) -> None:
    with httpx.Client(timeout=30) as http:
        is_error, problem = execute(http, server, server.token(), sent, body={"content": "x"})
    assert is_error and problem["code"] == "not_found"
    assert problem["detail"] == f"no capability is named {sent!r}{hint}"


def test_a_header_no_http_header_can_carry_is_invalid_params_and_audited(server: LiveServer) -> None:
    org = f"org-{uuid.uuid4().hex[:8]}"
    with httpx.Client(timeout=30) as http:
        is_error, problem = execute(
            http, server, server.token(org), "postMemory", header={"Idempotency-Key": "ключ-日本"}, body={"content": "x"}
        )
    assert is_error and problem["code"] == "invalid_params"
    assert audited(server, org, 1) == [("execute_capability:postMemory", False, "invalid_params")]


def test_an_unexpected_failure_is_backend_error_and_audited(server: LiveServer, monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(self: Executor, *args: Any) -> None:
        raise RuntimeError("the in-process request could not be built")

    monkeypatch.setattr(Executor, "run", broken)
    org = f"org-{uuid.uuid4().hex[:8]}"
    with httpx.Client(timeout=30) as http:
        is_error, problem = execute(http, server, server.token(org), "listMemories")
    assert is_error and problem["code"] == "backend_error" and "Traceback" not in json.dumps(problem)
    assert audited(server, org, 1) == [("execute_capability:listMemories", False, "backend_error")]


def test_a_call_to_an_unknown_tool_is_audited_under_its_name_cut_to_mcps_bound(app: FastAPI, make_token: MakeToken) -> None:
    """On both backends: MariaDB refuses a tool name longer than the audit column, which would drop the batch."""
    name = "launchRocket" + "x" * 300
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": {}}}
    headers = {"Authorization": f"Bearer {make_token('org-unknown-tool', 'ann')}", "Accept": "application/json, text/event-stream"}
    with TestClient(app, base_url="http://127.0.0.1") as client:
        answer = client.post("/mcp", json=message, headers=headers).json()
        assert "Unknown tool" in answer["error"]["message"]
        statement = sa.select(AuditEventRow.tool_name, AuditEventRow.success, AuditEventRow.error_code).where(
            AuditEventRow.org_id == "org-unknown-tool", AuditEventRow.tool_name != "unmatched"
        )
        for _ in range(100):
            with app.state.engine.connect() as connection:
                rows = [tuple(row) for row in connection.execute(statement)]
            if rows:
                break
            time.sleep(0.05)
    assert rows == [(name[:128], False, "not_found")]


def test_an_array_far_past_its_bound_is_told_in_a_few_lines(app: FastAPI, make_token: MakeToken) -> None:
    """100,000 blank tags: the length and the first items, then a word that there is more; not one
    error per item (13 MB before)."""
    with TestClient(app, base_url="http://127.0.0.1") as client:
        result = call_tool(client, make_token("acme", "ann"), "execute_capability", {"name": "postMemory", "body": {"content": "a fact", "tags": ["\u200b"] * 100_000}})
    assert result["isError"]
    text = result["content"][0]["text"]
    problem = json.loads(text)
    assert problem["code"] == "invalid_params"
    assert ("/body/tags", "maxItems") in [(e["field"], e["rule"]) for e in problem["errors"]]
    assert len(problem["errors"]) == MOST_FAILURES + 1 and len(text) < 20_000, (len(problem["errors"]), len(text))
    assert problem["errors"][-1] == {"field": "", "rule": "more", "message": f"more failures are not listed: mend these {MOST_FAILURES} and call again"}


@pytest.mark.parametrize(
    ("mode", "name", "said"),
    [
        (McpToolsMode.meta, "postMemory", 'postMemory is an operation, not a tool: run it with execute_capability {"name": "postMemory", ...}'),
        (McpToolsMode.meta, "postmemory", 'did you mean the operation postMemory? It is one, not a tool: run it with execute_capability'),
        (McpToolsMode.meta, "launchRocket", "tools/list names the tools this token may call"),
        (McpToolsMode.direct, "postmemory", "did you mean postMemory?"),
        (McpToolsMode.direct, "execute_capability", "tools/list names the tools this token may call"),
    ],
)
def test_an_operation_called_as_a_tool_is_told_how_this_mode_runs_it(
    database_url: str, make_token: MakeToken, mode: McpToolsMode, name: str, said: str
) -> None:
    """``tools/call postMemory`` answered "Unknown tool" and nothing more in meta mode, where it is
    run with execute_capability; direct mode, where operations are tools, still runs it as one."""
    app = create_app(Settings(database_url=database_url, mcp_tools=mode))
    token = make_token("org-operation-as-tool", "ann")
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": {"body": {"content": "x"}}}}
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    try:
        with TestClient(app, base_url="http://127.0.0.1") as client:
            error = client.post("/mcp", json=message, headers=headers).json()["error"]
            assert error["code"] == -32602 and error["message"].startswith(f"Unknown tool: {name}; {said}"), error
            if mode is McpToolsMode.direct:
                assert not call_tool(client, token, "postMemory", {"body": {"content": "a tool here"}})["isError"]
            else:
                called = call_tool(client, token, "execute_capability", {"name": "postMemory", "body": {"content": "as told"}})
                assert not called["isError"], called
    finally:
        app.state.engine.dispose()
