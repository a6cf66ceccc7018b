"""A real Memory Bank on a free port (uvicorn in a thread) and a real MCP client for it.

Shared by the MCP tests: they talk to the server the way an agent does, over
streamable HTTP with a bearer header, not by calling handlers.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.types import ASGIApp

from memory_bank.app import create_app
from memory_bank.settings import McpToolsMode, Settings
from support.backends import free_port
from support.clients import DEFAULT_AGENT, READ_WRITE


@dataclass
class LiveServer:
    app: FastAPI
    url: str

    @property
    def mcp_url(self) -> str:
        return self.url + "/mcp"

    def token(
        self, org: str | None = None, user: str = "ann", perms: Iterable[str] = READ_WRITE, agent: str | None = DEFAULT_AGENT
    ) -> str:
        """A bearer token bound to ``agent``, in ``org`` (a fresh one by default, so tests never share data)."""
        plaintext, _ = self.app.state.tokens.create(org or f"org-{uuid.uuid4().hex[:8]}", user, agent, perms)
        return str(plaintext)

    @asynccontextmanager
    async def client(self, token: str) -> AsyncIterator[Client]:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            async with Client(streamable_http_client(self.mcp_url, http_client=http)) as client:
                yield client


def tool_problem(result: Any) -> dict[str, Any]:
    """The problem document of a failed tool call: its text (failures carry no structured content)."""
    assert result.is_error and result.structured_content is None, result
    problem: dict[str, Any] = json.loads(result.content[0].text)
    return problem


MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
#: The ``memory-bank`` command installed beside this interpreter, as a desktop client spawns it.
MEMORY_BANK = str(Path(sys.executable).with_name("memory-bank"))


def call_tool(client: TestClient, token: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The ``result`` of one ``tools/call`` POSTed to ``/mcp`` of an app under a ``TestClient``."""
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    response = client.post("/mcp", json=message, headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]
    return result


def rpc_response(
    http: httpx.Client | TestClient, mcp_url: str, token: str, method: str, params: dict[str, Any] | None = None, id: str | int = 1
) -> httpx.Response:
    """One JSON-RPC request to ``mcp_url`` as a bare HTTP POST (stateless: no handshake needed), whatever its status."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return http.post(mcp_url, json=message, headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})


def post_rpc(http: httpx.Client, server: LiveServer, token: str, method: str, params: dict[str, Any] | None = None) -> Any:
    """One JSON-RPC request to ``/mcp`` answered with 200; its JSON answer."""
    response = rpc_response(http, server.mcp_url, token, method, params)
    assert response.status_code == 200, response.text
    return response.json()


@contextmanager
def live_server(
    directory: Path,
    mode: McpToolsMode = McpToolsMode.meta,
    rate_limit_rpm: int = 100_000,
    database_url: str | None = None,
    clock: Callable[[], float] = time.time,
    oauth_issuer: str | None = None,
) -> Iterator[LiveServer]:
    """Serve a fresh app until the block ends, on ``database_url`` or else on SQLite in ``directory``
    (each org gets ``rate_limit_rpm`` per minute of ``clock``), trusting ``oauth_issuer``'s tokens if given."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    settings = Settings(
        database_url=database_url or f"sqlite:///{directory / 'memory-bank.db'}",
        public_url=url,
        mcp_tools=mode,
        rate_limit_rpm=rate_limit_rpm,
        oauth_issuer=oauth_issuer,
    )
    app = create_app(settings, clock=clock)
    try:
        with serving(app, port):
            yield LiveServer(app, url)
    finally:
        app.state.engine.dispose()


@contextmanager
def serving(app: ASGIApp, port: int) -> Iterator[None]:
    """``app`` under uvicorn on 127.0.0.1:``port`` (in a thread) until the block ends."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=20)
