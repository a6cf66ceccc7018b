"""An exception no handler expects: a 500 problem document on a connection that stays open."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_bank.store.memories import MemoryStore
from support.mcp_live import LiveServer, live_server, tool_problem
from support.raw_http import connect


@pytest.fixture
def failing_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveServer]:
    """A real server whose listing fails with an exception nobody anticipated."""

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug nobody anticipated")

    monkeypatch.setattr(MemoryStore, "page", broken)
    with live_server(tmp_path) as live:
        yield live


def test_an_unexpected_exception_is_a_500_problem_on_a_kept_connection(failing_server: LiveServer) -> None:
    headers = {"Authorization": f"Bearer {failing_server.token()}", "X-Request-ID": "req-42"}
    with connect(failing_server.url) as connection:
        answers = [connection.request("GET", "/v1/memory", headers) for _ in range(3)]
        kept = connection.still_open()
    for answer in answers:
        assert answer.status == 500
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.headers["x-request-id"] == "req-42"
        problem = answer.json()
        assert problem["code"] == "backend_error"
        assert problem["request_id"] == "req-42"
        assert "Traceback" not in answer.body.decode() and "nobody anticipated" not in answer.body.decode()
    assert kept


async def test_an_unexpected_exception_reaches_an_mcp_client_as_backend_error(failing_server: LiveServer) -> None:
    async with failing_server.client(failing_server.token()) as mcp:
        result = await mcp.call_tool("execute_capability", {"name": "listMemories"})
    assert tool_problem(result)["code"] == "backend_error"
