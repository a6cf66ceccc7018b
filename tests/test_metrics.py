"""``/metrics``: the Prometheus series an operator needs, on a registry per app."""

from __future__ import annotations

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from memory_bank.app import create_app
from memory_bank.settings import Settings
from support.mcp_live import MCP_HEADERS, call_tool


def samples(client: TestClient) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def test_metrics_expose_requests_latency_limits_and_the_audit_queue(settings: Settings, make_token) -> None:
    app = create_app(settings.model_copy(update={"rate_limit_rpm": 2}))
    auth = {"Authorization": f"Bearer {make_token('acme', 'ann', agent='laptop')}"}
    with TestClient(app) as client:
        statuses = [client.get("/v1/memory", headers=auth).status_code for _ in range(3)]
        client.get("/v1/memory")  # 401
        seen = samples(client)
    app.state.engine.dispose()

    assert sorted(statuses) == [200, 200, 429]
    ops = frozenset({("operation", "listMemories"), ("code", "200")})
    assert seen[("memory_bank_requests_total", ops)] == 2
    assert seen[("memory_bank_requests_total", frozenset({("operation", "listMemories"), ("code", "429")}))] == 1
    assert seen[("memory_bank_requests_total", frozenset({("operation", "listMemories"), ("code", "401")}))] == 1
    latency = frozenset({("operation", "listMemories")})
    assert seen[("memory_bank_request_duration_seconds_count", latency)] == 4
    assert seen[("memory_bank_request_duration_seconds_bucket", latency | {("le", "+Inf")})] == 4
    assert seen[("memory_bank_rate_limit_rejections_total", frozenset())] == 1
    assert seen[("memory_bank_audit_queue_depth", frozenset())] >= 0
    for outcome in ("open", "closed"):  # present at 0 before the first failure
        assert seen[("memory_bank_rate_limiter_failures_total", frozenset({("outcome", outcome)}))] == 0
    for reason in ("queue_full", "sink_failed"):
        assert seen[("memory_bank_audit_events_dropped_total", frozenset({("reason", reason)}))] == 0


def test_each_app_counts_on_its_own_registry(settings: Settings) -> None:
    first, second = create_app(settings), create_app(settings)
    with TestClient(first) as one, TestClient(second) as two:
        one.get("/health")
        one.get("/health")
        two.get("/health")
        health = frozenset({("operation", "/health"), ("code", "200")})
        assert samples(one)[("memory_bank_requests_total", health)] == 2
        assert samples(two)[("memory_bank_requests_total", health)] == 1
    first.state.engine.dispose()
    second.state.engine.dispose()


def test_mcp_tool_calls_are_counted_by_tool_and_outcome(settings: Settings, make_token) -> None:
    """The /mcp request carrying a failed call answers 200, so its failures showed in no series."""
    app = create_app(settings)
    token = make_token("acme", "ann", agent="laptop")
    with TestClient(app, base_url="http://127.0.0.1") as client:  # a loopback origin, as a local client has
        saved = call_tool(client, token, "execute_capability", {"name": "postMemory", "body": {"content": "tabs"}})
        missing = call_tool(client, token, "execute_capability", {"name": "getMemory", "path": {"memory_id": "A" * 21}})
        call_tool(client, token, "execute_capability", {"name": "postMemory", "body": {}})
        client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x" * 60, "arguments": {}}}, headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})
        seen = samples(client)
    app.state.engine.dispose()
    assert not saved.get("isError") and missing["isError"]

    def calls(tool: str, outcome: str) -> float:
        return seen.get(("memory_bank_tool_calls_total", frozenset({("tool", tool), ("outcome", outcome)})), 0.0)

    assert calls("execute_capability:postMemory", "ok") == 1
    assert calls("execute_capability:getMemory", "not_found") == 1
    assert calls("execute_capability:postMemory", "invalid_params") == 1
    assert calls("(unknown)", "not_found") == 1  # the caller's name is no label
