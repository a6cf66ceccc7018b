"""The TypeScript MCP SDK (npm) as the client: failures must reach it as results, not exceptions.

The SDK checks every structured result against the tool's ``outputSchema``; a failure
whose structured content does not match is thrown away as -32602 and the agent never
learns why its call failed. ``.ci/run`` installs the SDK under ``.ci/node``; elsewhere
the test skips with the install command, except under CI=true, where a missing SDK
is a failure rather than a silent skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memory_bank.settings import McpToolsMode
from support.clock import pinned
from support.mcp_live import LiveServer, live_server
from support.requirements import unavailable

NODE_DIR = Path(__file__).resolve().parents[1] / ".ci" / "node"
SCRIPT = Path(__file__).with_name("support") / "mcp_ts_client.cjs"
INSTALL = "npm install --prefix .ci/node node@22 @modelcontextprotocol/sdk@1"
#: Each org's budget on the test server: small, so a test can spend it.
BUDGET = 6


@pytest.fixture(scope="module")
def node() -> str:
    sdk = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "sdk"
    binary = NODE_DIR / "node_modules" / ".bin" / "node"
    found = str(binary) if binary.exists() else shutil.which("node")
    if not sdk.is_dir() or found is None:
        unavailable("the TypeScript MCP SDK", "it is not installed under .ci/node", INSTALL)
    return found


@pytest.fixture(scope="module", params=[McpToolsMode.direct, McpToolsMode.both])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(tmp_path_factory.mktemp("ts-sdk"), request.param, rate_limit_rpm=BUDGET, clock=pinned) as live:
        yield live


def run_calls(node: str, server: LiveServer, token: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    env = {**os.environ, "NODE_PATH": str(NODE_DIR / "node_modules")}
    command = [node, str(SCRIPT), server.mcp_url, token, json.dumps(calls)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    output: dict[str, Any] = json.loads(done.stdout)
    return output


def problem_of(call: dict[str, Any]) -> dict[str, Any]:
    """The problem of a failed call as the SDK handed it over (not thrown, text only)."""
    assert "thrown" not in call, call
    result = call["result"]
    assert result["isError"] is True and "structuredContent" not in result, result
    problem: dict[str, Any] = json.loads(result["content"][0]["text"])
    return problem


def rest_call(http: httpx.Client, server: LiveServer, token: str) -> int:
    return http.get(server.url + "/v1/memory", headers={"Authorization": f"Bearer {token}"}).status_code


def test_failures_and_successes_pass_the_sdk_schema_checks(node: str, server: LiveServer) -> None:
    calls = [
        {"name": "getMemory", "arguments": {"path": {"memory_id": "A" * 21}}},
        {"name": "postMemory", "arguments": {"body": {"content": 7}}},
        {"name": "postMemory", "arguments": {"body": {"content": "Saved through the TypeScript SDK"}}},
    ]
    found = run_calls(node, server, server.token(), calls)
    assert "postMemory" in found["tools"]
    missing, invalid, saved = found["calls"]
    assert problem_of(missing)["code"] == "not_found"
    assert [(e["field"], e["rule"]) for e in problem_of(invalid)["errors"]] == [("/body/content", "type")]
    assert "thrown" not in saved and saved["result"].get("isError") is not True, saved
    assert saved["result"]["structuredContent"]["content"] == "Saved through the TypeScript SDK"


def test_a_spent_budget_reaches_the_sdk_with_its_retry_hint(node: str, server: LiveServer) -> None:
    # The handshake and tools/list are charged too, so the budget runs out within BUDGET calls.
    found = run_calls(node, server, server.token(), [{"name": "listMemories", "arguments": {}}] * BUDGET)
    refused = [call for call in found["calls"] if "thrown" in call or call["result"].get("isError")]
    assert refused, found
    problem = problem_of(refused[0])
    assert problem["code"] == "rate_limited"
    assert 1 <= problem["retry_after_seconds"] <= 60
    assert all(problem_of(call)["code"] == "rate_limited" for call in refused)


def test_a_refused_listing_reaches_the_sdk_as_an_http_429_naming_the_code_and_the_wait(node: str, server: LiveServer) -> None:
    token = server.token()
    with httpx.Client(timeout=30) as http:  # the handshake then spends the budget's last request
        spent = [rest_call(http, server, token) for _ in range(BUDGET - 1)]
    assert spent == [200] * (BUDGET - 1)
    refused = run_calls(node, server, token, [])["listThrown"]
    # The SDK throws the status as the code, with the body (the JSON-RPC error) in its message.
    assert refused["code"] == 429, refused
    assert '"code":"rate_limited"' in refused["message"] and '"retry_after_seconds":45' in refused["message"]
