"""Every MCP request spends the org's budget exactly once, whatever path it takes.

A call that reaches a REST route is charged there, after its permission check; every
other request (the handshake, ``tools/list``, a call refused before dispatch, an
unknown method) is charged by the MCP layer. Checked as a property: for any sequence
of requests from one org, the requests that count are admitted up to the budget and
refused with ``rate_limited`` after it, and the ones REST would not charge (a
permission refusal) never count. Raw JSON-RPC over HTTP, so each step is one request.
A request refused without a tool result is refused in HTTP's terms too (429 and
``Retry-After``), with its JSON-RPC error as the body, which the Python SDK surfaces.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.clock import pinned
from mcp.shared.exceptions import MCPError

from support.mcp_live import LiveServer, live_server, rpc_response

BUDGET = 4
REFUSED = -32000
#: ``support.clock.pinned`` is 15 s into its minute.
WAIT = 45


@dataclass(frozen=True)
class Step:
    """One request: its JSON-RPC method and params, or a REST call; whether it should count."""

    method: str
    params: dict[str, Any] | None = None
    read_only: bool = False
    counts: bool = True
    #: An unknown tool is refused as unknown whatever the budget, so only its charge shows.
    shows_refusal: bool = True


def execute(name: str, **groups: Any) -> dict[str, Any]:
    return {"name": "execute_capability", "arguments": {"name": name, **groups}}


STEPS: dict[str, Step] = {
    "initialize": Step(
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "metering-test", "version": "1"}},
    ),
    "tools/list": Step("tools/list"),
    "ping": Step("ping"),
    "unknown method": Step("memories/launch"),
    "malformed call": Step("tools/call", {"arguments": {}}),
    "unknown tool": Step("tools/call", {"name": "launchRocket", "arguments": {}}, shows_refusal=False),
    "dispatched call": Step("tools/call", execute("listMemories")),
    "unknown capability": Step("tools/call", execute("launchRocket")),
    "bad arguments": Step("tools/call", execute("getMemory", path={"memory_id": 7})),
    "search": Step("tools/call", {"name": "search_capabilities", "arguments": {"query": "save a memory"}}),
    "bad search": Step("tools/call", {"name": "search_capabilities", "arguments": {"query": "x", "limit": 50}}),
    "denied, bad arguments": Step("tools/call", execute("postMemory", body={}), read_only=True, counts=False),
    "denied": Step("tools/call", execute("postMemory", body={"content": "x"}), read_only=True, counts=False),
    "REST": Step("REST"),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(tmp_path_factory.mktemp("metering"), rate_limit_rpm=BUDGET, clock=pinned) as live:
        yield live



def send(http: httpx.Client, server: LiveServer, step: Step, token: str) -> Any:
    if step.method == "REST":
        return http.get(server.url + "/v1/memory", headers={"Authorization": f"Bearer {token}"})
    response = rpc_response(http, server.mcp_url, token, step.method, step.params)
    if response.status_code != 200:
        check_http_refusal(response)
    return response.json()


def check_http_refusal(response: httpx.Response, request_id: str | int = 1) -> dict[str, Any]:
    """A request refused before it ran: 429 with ``Retry-After``, and the JSON-RPC error for its id
    (with the problem and the same wait as ``data``) as the application/json the SDKs read; its error."""
    assert response.status_code == 429, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.headers["retry-after"] == str(WAIT)
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == request_id
    error: dict[str, Any] = body["error"]
    assert error["code"] == REFUSED and "budget" in error["message"]
    assert error["data"]["code"] == "rate_limited" and error["data"]["retry_after_seconds"] == WAIT
    return error


def problem_of(answer: Any) -> dict[str, Any] | None:
    """The problem a request was answered with: a JSON-RPC error's data, a failed tool's text, a REST body."""
    if isinstance(answer, httpx.Response):
        return answer.json() if answer.is_error else None
    if "error" in answer:
        data = answer["error"].get("data")
        return data if isinstance(data, dict) else {"rpc": answer["error"]["code"]}
    result = answer["result"]
    if result.get("isError"):
        problem: dict[str, Any] = json.loads(result["content"][0]["text"])
        return problem
    return None


def is_rate_limited(answer: Any) -> bool:
    problem = problem_of(answer)
    return problem is not None and problem.get("code") == "rate_limited"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=2 * BUDGET + 2))
def test_each_request_counts_once_and_only_after_its_permission_check(server: LiveServer, names: list[str]) -> None:
    org = f"org-{uuid.uuid4().hex[:10]}"
    writer, reader = server.token(org), server.token(org, user="rob", perms=["memory:read"])
    spent = 0
    with httpx.Client(timeout=30) as http:
        for name in names:
            step = STEPS[name]
            answer = send(http, server, step, reader if step.read_only else writer)
            spent += step.counts
            expected = step.counts and spent > BUDGET and step.shows_refusal
            assert is_rate_limited(answer) == expected, (name, spent, problem_of(answer))
            if not step.counts:
                assert (problem_of(answer) or {}).get("code") == "permission_denied", (name, answer)


@pytest.mark.parametrize("method", ["tools/list", "initialize", "ping"])
def test_a_refused_request_without_a_tool_result_is_429_with_the_wait_and_its_json_rpc_error(
    server: LiveServer, method: str
) -> None:
    token, params = server.token(), STEPS[method].params
    with httpx.Client(timeout=30) as http:
        admitted = [rpc_response(http, server.mcp_url, token, method, params).status_code for _ in range(BUDGET)]
        refused = rpc_response(http, server.mcp_url, token, method, params, id="the-last")
    assert admitted == [200] * BUDGET
    check_http_refusal(refused, "the-last")


async def test_the_python_sdk_surfaces_the_refusal_as_its_json_rpc_error(server: LiveServer) -> None:
    async with server.client(server.token()) as client:  # the handshake is the first request charged
        for _ in range(BUDGET - 1):
            await client.list_tools()
        with pytest.raises(MCPError) as refused:
            await client.list_tools()
    assert refused.value.code == REFUSED and "budget" in refused.value.message
    assert refused.value.data == {**refused.value.data, "code": "rate_limited", "retry_after_seconds": WAIT}


def test_a_refused_tool_call_is_a_tool_result_with_the_wait(server: LiveServer) -> None:
    token = server.token()
    with httpx.Client(timeout=30) as http:
        answers = [send(http, server, STEPS["bad arguments"], token) for _ in range(BUDGET + 1)]
    assert [(problem_of(a) or {}).get("code") for a in answers] == ["invalid_params"] * BUDGET + ["rate_limited"]
    assert 1 <= (problem_of(answers[BUDGET]) or {})["retry_after_seconds"] <= 60


MODERN = "2026-07-28"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}
SEARCH_CALL = {"name": "search_capabilities", "arguments": {"query": "save a memory"}}


@pytest.mark.parametrize(
    ("params", "headers"),
    [
        pytest.param(SEARCH_CALL, {"Mcp-Method": "tools/call", "Mcp-Name": "search_capabilities"}, id="no _meta"),
        pytest.param({**SEARCH_CALL, "_meta": MODERN_META}, {"Mcp-Method": "tools/call", "Mcp-Name": "other"}, id="Mcp-Name differs"),
        pytest.param({**SEARCH_CALL, "_meta": MODERN_META}, {"Mcp-Method": "ping", "Mcp-Name": "search_capabilities"}, id="Mcp-Method differs"),
    ],
)
def test_a_tool_call_the_sdk_refuses_before_the_toolbox_still_counts(
    server: LiveServer, params: dict[str, Any], headers: dict[str, str]
) -> None:
    """On the 2026-07-28 path the SDK answers these 400 before its handler runs, so the toolbox,
    which charges the tool calls, never saw them: they were free, as many as a client sent."""
    token = server.token()
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    sent = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}", "MCP-Protocol-Version": MODERN}
    with httpx.Client(timeout=30) as http:
        answers = [http.post(server.mcp_url, json=message, headers=sent | headers) for _ in range(BUDGET)]
        assert [answer.status_code for answer in answers] == [400] * BUDGET, answers[0].text
        check_http_refusal(rpc_response(http, server.mcp_url, token, "tools/list"))
