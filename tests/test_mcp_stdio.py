"""MCP over stdio: ``memory-bank mcp`` spawned as a client would, and its refusals."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import jsonrpc_message_adapter
from pydantic import ValidationError

from memory_bank.mcp.envelope import BAD_ID, BATCH, NOT_A_MESSAGE, NOT_JSON, REPEATED_KEY, EnvelopeError, check_envelope, classify
from memory_bank.settings import Settings
from memory_bank.store.database import open_database
from memory_bank.store.tokens import TokenStore
from support.mcp_live import MEMORY_BANK


async def test_stdio_lists_searches_and_executes(stdio_env: dict[str, str]) -> None:
    server = StdioServerParameters(command=MEMORY_BANK, args=["mcp"], env=stdio_env)
    async with Client(server) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["search_capabilities", "execute_capability"]
        found = await client.call_tool("search_capabilities", {"query": "save a memory"})
        assert found.structured_content["results"][0]["name"] == "postMemory"
        saved = await client.call_tool("execute_capability", {"name": "postMemory", "body": {"content": "stdio remembers"}})
        assert not saved.is_error, saved.structured_content
        hits = await client.call_tool("execute_capability", {"name": "getMemorySearch", "query": {"q": "stdio remembers"}})
    assert hits.structured_content["results"][0]["id"] == saved.structured_content["id"]


async def test_a_token_revoked_mid_session_gets_nothing_more_not_even_the_tool_list(stdio_env: dict[str, str]) -> None:
    """The token is verified per request, as over HTTP: a revoked one lists no tools and its calls fail."""
    server = StdioServerParameters(command=MEMORY_BANK, args=["mcp"], env=stdio_env)
    engine = open_database(Settings(database_url=stdio_env["MEMORY_BANK_DATABASE_URL"]))
    tokens = TokenStore(engine)
    try:
        async with Client(server) as client:
            assert (await client.list_tools()).tools
            principal = tokens.verify(stdio_env["MEMORY_BANK_TOKEN"])
            assert principal is not None
            assert tokens.revoke(principal.token_id, principal.org_id)
            with pytest.raises(MCPError) as refused:
                await client.list_tools()
            called = await client.call_tool("execute_capability", {"name": "getMemorySearch", "query": {"q": "x"}})
    finally:
        engine.dispose()
    assert refused.value.error.data["code"] == "unauthorized"
    assert called.is_error and json.loads(called.content[0].text)["code"] == "unauthorized"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"MEMORY_BANK_MCP_ALLOW_STDIO": "false"}, "MEMORY_BANK_MCP_ALLOW_STDIO=true"),
        ({"MEMORY_BANK_ENV": "production"}, "never served in production"),
        ({"MEMORY_BANK_TOKEN": ""}, "set MEMORY_BANK_TOKEN"),
        ({"MEMORY_BANK_TOKEN": "mb_not-a-token"}, "not a valid token"),
        ({"MEMORY_BANK_TOKEN": "Bearer mb_not-a-token"}, "drop the 'Bearer ' in front of it"),
    ],
)
def test_stdio_refuses_with_a_clear_error(stdio_env: dict[str, str], change: dict[str, str], message: str) -> None:
    env = {**os.environ, **stdio_env, **change}
    done = subprocess.run([MEMORY_BANK, "mcp"], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert message in " ".join(done.stderr.split())
    assert done.stdout == ""


def test_stdio_logs_no_public_url_and_starts_no_http_session_manager(stdio_env: dict[str, str]) -> None:
    """Nothing is served over HTTP: the start line said ``public URL http://127.0.0.1:8000`` and the
    /mcp transport's "StreamableHTTP session manager started" (a new user's pass)."""
    env = {**os.environ, **stdio_env}
    done = subprocess.run([MEMORY_BANK, "mcp"], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (start,) = [line for line in done.stderr.splitlines() if "memory_bank.start" in line]
    assert start.endswith(", rate limits in-process, MCP over stdio")
    assert "public URL" not in done.stderr and "StreamableHTTP" not in done.stderr


HELLO = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
OPENING = [
    {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": HELLO},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]


def converse(stdio_env: dict[str, str], lines: list[object], answers: int) -> list[Any]:
    """The first ``answers`` lines ``memory-bank mcp`` writes for ``lines`` (a string is sent as it is);
    ``None`` for each one that has not come within a minute."""
    stdin = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    env = {**os.environ, **stdio_env}
    process = subprocess.Popen([MEMORY_BANK, "mcp"], env=env, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    watchdog = threading.Timer(60, process.kill)  # a reply that never comes fails the test instead of hanging it
    watchdog.start()
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(stdin)
        process.stdin.flush()  # stdin stays open: a client waits for its answers before it hangs up
        return [json.loads(process.stdout.readline() or "null") for _ in range(answers)]
    finally:
        watchdog.cancel()
        process.kill()
        process.wait()


def test_a_line_that_is_not_one_message_is_answered_not_dropped(stdio_env: dict[str, str]) -> None:
    """Each bad line gets the JSON-RPC error HTTP gives it; the session goes on."""
    lines = [
        *OPENING,
        [{"jsonrpc": "2.0", "id": 1, "method": "ping"}],
        {"jsonrpc": "1.0", "id": 2, "method": "ping"},
        "{not json",
        {"jsonrpc": "2.0", "id": None, "method": "ping"},  # the SDK's reader takes it for a notification
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
    ]
    replies = converse(stdio_env, lines, 6)
    errors = [r["error"] for r in replies if r and "error" in r]
    assert [r["id"] for r in replies if r and "error" in r] == [None, None, None, None]
    assert errors == [
        {"code": -32600, "message": BATCH},
        {"code": -32600, "message": NOT_A_MESSAGE},
        {"code": -32700, "message": f"{NOT_JSON}: key must be a string at line 1 column 2"},
        {"code": -32600, "message": BAD_ID},
    ]
    assert {"jsonrpc": "2.0", "id": 3, "result": {}} in replies


def test_a_spent_budget_refuses_a_listing_over_stdio_with_its_json_rpc_error_and_the_wait(stdio_env: dict[str, str]) -> None:
    """stdio has no status to say it with: the server itself charges what no tool result answers.
    A budget of one is spent by the handshake (a new calendar minute could free one more request)."""
    listings = [{"jsonrpc": "2.0", "id": n, "method": "tools/list"} for n in (1, 2)]
    replies = converse({**stdio_env, "MEMORY_BANK_RATE_LIMIT_RPM": "1"}, [*OPENING, *listings], 3)
    refusals = [reply["error"] for reply in replies[1:] if reply and "error" in reply]
    assert refusals, replies
    for error in refusals:
        assert error["code"] == -32000 and error["data"]["code"] == "rate_limited"
        assert 1 <= error["data"]["retry_after_seconds"] <= 60


def test_a_key_given_twice_is_refused_as_http_refuses_it(stdio_env: dict[str, str]) -> None:
    """The SDK's reader keeps the later member; the raw line is checked as HTTP checks a body. The
    refusal answers the request's id, unless ``"id"`` is the key given twice; the session goes on."""
    call = '{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": %s}'
    lines = [
        *OPENING,
        '{"jsonrpc": "2.0", "id": 1, "method": "ping", "method": "tools/list"}',
        call % (2, '{"name": "search_capabilities", "name": "execute_capability", "arguments": {"name": "postMemory"}}'),
        call % (3, '{"name": "execute_capability", "arguments": {"name": "getMemorySearch", "name": "postMemory", "body": {"content": "a"}}}'),
        call % (4, '{"name": "execute_capability", "arguments": {"name": "postMemory", "body": {"content": "a", "content": "b"}}}'),
        '{"jsonrpc": "2.0", "id": 5, "id": 6, "method": "ping"}',
        '{"jsonrpc": "2.0", "method": "notifications/initialized", "method": "notifications/cancelled"}',
        {"jsonrpc": "2.0", "id": 7, "method": "ping"},
    ]
    replies = converse(stdio_env, lines, 8)
    refused = {"code": -32600, "message": REPEATED_KEY}
    assert [(r["id"], r["error"]) for r in replies if r and "error" in r] == [(1, refused), (2, refused), (3, refused), (4, refused), (None, refused), (None, refused)]
    assert {"jsonrpc": "2.0", "id": 7, "result": {}} in replies


def test_stdio_refuses_an_expired_token_saying_so(stdio_env: dict[str, str]) -> None:
    engine = open_database(Settings(database_url=stdio_env["MEMORY_BANK_DATABASE_URL"]))
    expired, _ = TokenStore(engine).create("acme", "ann", "laptop", ["memory:read"], expires_at=datetime.now(UTC) - timedelta(minutes=1))
    engine.dispose()
    env = {**os.environ, **stdio_env, "MEMORY_BANK_TOKEN": expired}
    done = subprocess.run([MEMORY_BANK, "mcp"], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "not a valid token: the bearer token expired at" in " ".join(done.stderr.split())
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b'"\\ud800"', "a string holds half a UTF-16 surrogate pair (an escape \\ud800 to \\udfff) without the other half (a pair: \\ud83d\\ude00) (at line 1 column 8)"),
        (b"[" * 500 + b"]" * 500, "arrays and objects are nested deeper than the parser reads (at line 1 column 202)"),
        (b"1" * 5000, "a number has more digits than the parser reads"),
        (b"{not json", "key must be a string at line 1 column 2"),
    ],
    ids=["lone surrogate", "nested 500 deep", "5000-digit number", "not json"],
)
def test_a_line_the_reader_cannot_take_gets_the_reason_http_gives(line: bytes, reason: str) -> None:
    """``classify`` (the stdio reader's failures) and ``check_envelope`` (HTTP's) name the same reason."""
    with pytest.raises(ValidationError) as failure:
        jsonrpc_message_adapter.validate_json(line)
    said = classify(failure.value)
    with pytest.raises(EnvelopeError) as checked:
        check_envelope(line)
    assert said.code == checked.value.code == -32700
    assert said.message == checked.value.message
    assert said.message.startswith(f"{NOT_JSON}: {reason}")
