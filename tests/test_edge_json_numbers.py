"""``NaN``, ``Infinity`` and ``-Infinity`` are not JSON: every door refuses them as an unreadable body.

RFC 8259 §6 has no such tokens, but Python's and pydantic's parsers take them, so a NaN
reached the model and failed a bound (422 at ``/body/confidence``) or passed where there
was none. Now they are refused where the body is parsed, as any body that is not JSON is:
REST and import with 422 ``invalid_params`` at ``/body`` (rule ``json``), ``/mcp`` and
stdio with ``-32700``, each saying what failed. A number past a double's range (``1e400``)
is read as infinity by the same parsers and is refused alike.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from memory_bank.mcp.envelope import NOT_JSON
from memory_bank.standard_json import NOT_FINITE
from support.clients import MakeClient, MakeToken
from support.mcp_live import MEMORY_BANK
from support.transfer import exported

ID = "A" * 21
#: Each not-JSON number where the body has a number, where it has none, and deep inside.
TOKENS = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"]
BODIES = [
    ("POST", "/v1/memory", '{{"content": "a fact", "confidence": {}}}'),
    ("POST", "/v1/memory", '{{"content": "a fact", "tags": [{}]}}'),
    ("PUT", "/v1/memory/keypaths/a.b", '{{"content": "a value", "confidence": {}}}'),
    ("PATCH", f"/v1/memory/{ID}", '{{"confidence": {}}}'),
    ("POST", f"/v1/memory/{ID}/feedback", '{{"feedback": "helpful", "extra": {{"deep": [{}]}}}}'),
    ("POST", "/v1/memory", '{{"content": "a fact", "confidence": {}, "confidence": 0.5}}'),
]
PARSE_ERROR = {"code": -32700, "message": f"{NOT_JSON}: {NOT_FINITE}"}


def unreadable(response: Any) -> None:
    assert response.status_code == 422, response.text
    problem = response.json()
    assert problem["code"] == "invalid_params"
    assert [(e["field"], e["rule"], e["message"]) for e in problem["errors"]] == [("/body", "json", NOT_FINITE)]


@pytest.mark.parametrize("token", TOKENS)
@pytest.mark.parametrize(("method", "path", "template"), BODIES)
def test_rest_refuses_a_not_json_number_as_unreadable(make_client: MakeClient, token, method, path, template) -> None:
    ann = make_client("acme", "ann")
    headers = {"Content-Type": "application/json"}
    unreadable(ann.request(method, path, content=template.format(token).encode(), headers=headers))
    assert ann.get("/v1/memory").json()["items"] == []


def test_the_admin_bodies_refuse_it_too(make_client: MakeClient) -> None:
    admin = make_client("acme", "root", ["memory:admin"])
    body = '{"name": "x", "user_id": "bob", "permissions": ["memory:read"], "expires_in_seconds": NaN}'
    unreadable(admin.post("/v1/admin/tokens", content=body.encode(), headers={"Content-Type": "application/json"}))


@pytest.mark.parametrize("token", TOKENS)
@pytest.mark.parametrize("member", ["{}", "{}, \"confidence\": 0.6"], ids=["alone", "under-a-repeated-key"])
def test_an_import_line_with_one_is_refused_at_that_line(make_client: MakeClient, token: str, member: str) -> None:
    """Under a repeated key too: the model keeps the later member, so the line it took showed no NaN."""
    ann = make_client("acme", "ann")
    assert ann.post("/v1/memory", json={"content": "a fact"}).status_code == 201
    line = json.dumps({**exported(ann)[0], "id": "B" * 21}).replace('"confidence": 0.6', '"confidence": ' + member.format(token))
    answer = ann.post("/v1/memory/import", content=line + "\n")
    assert answer.status_code == 422 and answer.json()["code"] == "invalid_params", answer.text
    assert [(e["field"], e["rule"]) for e in answer.json()["errors"]] == [("/body/line/1", "json")]
    assert NOT_FINITE in answer.json()["errors"][0]["message"]
    assert len(ann.get("/v1/memory").json()["items"]) == 1


def test_finite_numbers_still_pass(make_client: MakeClient) -> None:
    ann = make_client("acme", "ann")
    for number in ("0.5", "1e-400", "1E0", "-0.0"):
        answer = ann.post("/v1/memory", content=f'{{"content": "a fact {number}", "confidence": {number}}}'.encode(), headers={"Content-Type": "application/json"})
        assert answer.status_code == 201, (number, answer.text)


@pytest.mark.parametrize("token", TOKENS)
@pytest.mark.parametrize(
    "template",
    [
        '{{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {{"name": "execute_capability", '
        '"arguments": {{"name": "postMemory", "body": {{"content": "a fact", "confidence": {}}}}}}}}}',
        '{{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {{"_meta": {{"n": {}}}}}}}',
        '{{"jsonrpc": "2.0", "id": {}, "method": "ping"}}',
        "{}",
        (
            '{{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {{"name": "execute_capability", '
            '"arguments": {{"name": "postMemory", "body": {{"content": "a fact", "confidence": {}, "confidence": 0.5}}}}}}}}'
        ),
        '{{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {{"n": {}}}, "params": {{}}}}',
    ],
    ids=["tool call", "ping", "as the id", "alone", "under a repeated key", "a repeated member"],
)
def test_mcp_answers_a_not_json_number_with_a_parse_error(app: FastAPI, make_token: MakeToken, token, template) -> None:
    headers = {"Authorization": f"Bearer {make_token('acme', 'ann')}", "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    with TestClient(app, base_url="http://127.0.0.1") as client:
        answer = client.post("/mcp", content=template.format(token).encode(), headers=headers)
        assert answer.status_code == 400, answer.text
        assert answer.json() == {"jsonrpc": "2.0", "id": None, "error": PARSE_ERROR}
        assert client.get("/v1/memory", headers=headers).json()["items"] == []


def test_stdio_answers_it_with_the_same_parse_error(stdio_env: dict[str, str]) -> None:
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    call = '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "execute_capability", "arguments": {"name": "postMemory", "body": {"content": "a fact", "confidence": NaN}}}}'
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        call,
        '{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"_meta": {"n": -Infinity}}}',
        '{"jsonrpc": "1.0", "id": 4, "method": "ping", "params": {"n": 1e400}}',
        "Infinity",
        json.dumps({"jsonrpc": "2.0", "id": 5, "method": "ping"}),
    ]
    process = subprocess.Popen(
        [MEMORY_BANK, "mcp"], env={**os.environ, **stdio_env}, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    watchdog = threading.Timer(60, process.kill)
    watchdog.start()
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write("".join(line + "\n" for line in lines))
        process.stdin.flush()
        replies = [json.loads(process.stdout.readline() or "null") for _ in range(6)]
    finally:
        watchdog.cancel()
        process.kill()
        process.wait()
    assert [r["error"] for r in replies if r and "error" in r] == [PARSE_ERROR] * 4
    assert {"jsonrpc": "2.0", "id": 5, "result": {}} in replies
