"""End-to-end: an agent saves a memory and recalls it, over MCP, against the real server.

Everything is the shipped product: ``memory-bank token create`` mints the token,
``memory-bank serve`` (a uvicorn subprocess on a free port, a fresh SQLite file in a
temp dir) or ``memory-bank mcp`` (stdio) serves it, and ``mcp.Client`` talks to it
as an agent's client would. Exits non-zero, naming the step, on any failure.

    .venv/bin/python evals/flows/memory_save_recall.py [--transport http|stdio]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

MEMORY_BANK = str(Path(sys.executable).with_name("memory-bank"))
CONTENT = "Deploy the API to a Daytona sandbox with `daytona sandbox create` before merging"
CONTEXT = {"snippet": "always try a change in a Daytona sandbox before it is merged", "origin": "slack#ops"}


class FlowFailed(Exception):
    """A step did not do what an agent relies on."""


def check(condition: bool, step: str, detail: Any = "") -> None:
    if not condition:
        raise FlowFailed(f"{step}: {detail}")
    print(f"  ok  {step}")


def mint_token(env: dict[str, str]) -> str:
    command = [MEMORY_BANK, "token", "create", "--org", "flow", "--user", "ada", "--agent", "laptop",
               "--permissions", "memory:read,memory:write"]
    return subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout.strip()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def serving(env: dict[str, str]) -> Iterator[str]:
    """``memory-bank serve`` on a free port until the block ends; yields its base URL."""
    port = free_port()
    command = [MEMORY_BANK, "serve", "--port", str(port)]
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(base + "/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise FlowFailed("memory-bank serve did not come up")
            time.sleep(0.1)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=20)


@asynccontextmanager
async def mcp_over_http(base: str, token: str) -> AsyncIterator[Client]:
    """An MCP client for ``base``/mcp sending the bearer header."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        async with Client(streamable_http_client(base + "/mcp", http_client=http)) as client:
            yield client


@asynccontextmanager
async def over_http(env: dict[str, str], token: str) -> AsyncIterator[Client]:
    """``memory-bank serve`` and a client sending the bearer header."""
    with serving(env) as base:
        async with mcp_over_http(base, token) as client:
            yield client


@asynccontextmanager
async def over_stdio(env: dict[str, str], token: str) -> AsyncIterator[Client]:
    """``memory-bank mcp`` spawned the way a desktop client spawns it."""
    stdio_env = {**env, "MEMORY_BANK_MCP_ALLOW_STDIO": "true", "MEMORY_BANK_TOKEN": token}
    async with Client(StdioServerParameters(command=MEMORY_BANK, args=["mcp"], env=stdio_env)) as client:
        yield client


async def save_and_recall(client: Client) -> None:
    found = await client.call_tool("search_capabilities", {"query": "search my memories"})
    names = [card["name"] for card in (found.structured_content or {}).get("results", [])]
    check(not found.is_error and "getMemorySearch" in names, "search_capabilities finds getMemorySearch", names)

    body = {"content": CONTENT, "tags": ["deploy", "daytona"], "contexts": [CONTEXT]}
    saved = await client.call_tool("execute_capability", {"name": "postMemory", "body": body})
    memory = saved.structured_content or {}
    check(not saved.is_error and memory.get("content") == CONTENT, "postMemory saves the memory", memory)

    query = {"q": "daytona sandbox deploy"}
    recalled = await client.call_tool("execute_capability", {"name": "getMemorySearch", "query": query})
    hits = (recalled.structured_content or {}).get("results", [])
    hit = next((h for h in hits if h["id"] == memory.get("id")), None)
    check(not recalled.is_error and hit is not None, "getMemorySearch recalls it", hits)
    scored = hit is not None and 0 < hit["score"] <= 1 and hit["contexts"] == [CONTEXT]
    check(scored, "with a score and its context", hit)


async def main(transport: str) -> None:
    with tempfile.TemporaryDirectory() as directory:
        env = {**os.environ, "MEMORY_BANK_DATABASE_URL": f"sqlite:///{Path(directory) / 'memory-bank.db'}"}
        token = mint_token(env)
        connect = over_http if transport == "http" else over_stdio
        async with connect(env, token) as client:
            await save_and_recall(client)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=["http", "stdio"], default="http")
    transport = parser.parse_args().transport
    print(f"memory_save_recall over {transport}")
    try:
        asyncio.run(main(transport))
    except FlowFailed as failure:
        print(f"  FAILED  {failure}", file=sys.stderr)
        sys.exit(1)
    print("memory_save_recall: passed")
