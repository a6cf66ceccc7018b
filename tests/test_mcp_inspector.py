"""A client nobody here wrote: the MCP Inspector CLI (npm) against the running server.

``.ci/run`` installs it (with a Node 22 it needs) under ``.ci/node``; elsewhere the
test skips with the install command, except under CI=true, where a missing
Inspector is a failure rather than a silent skip.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_bank.settings import McpToolsMode
from support.mcp_live import LiveServer, live_server
from support.requirements import need

BIN = Path(__file__).resolve().parents[1] / ".ci" / "node" / "node_modules" / ".bin"
INSTALL = "npm install --prefix .ci/node node@22 @modelcontextprotocol/inspector@2"


@pytest.fixture(scope="module")
def inspector() -> list[str]:
    installed = (BIN / "mcp-inspector").exists() and (BIN / "node").exists()
    need("the MCP Inspector", installed, "it is not installed under .ci/node", INSTALL)
    return [str(BIN / "node"), str(BIN / "mcp-inspector"), "--cli"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(tmp_path_factory.mktemp("inspector")) as live:
        yield live


@pytest.fixture(scope="module")
def direct_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(tmp_path_factory.mktemp("inspector-direct"), McpToolsMode.direct) as live:
        yield live


def inspect(inspector: list[str], server: LiveServer, *args: str, tool_failed: bool = False) -> dict:
    """The Inspector's JSON output; it exits 5 (``tool_is_error``) after printing a failed tool's result."""
    token = server.token()
    command = [*inspector, server.mcp_url, "--transport", "http", "--header", f"Authorization: Bearer {token}", *args]
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == (5 if tool_failed else 0), done.stderr
    return json.loads(done.stdout)


def test_inspector_lists_the_meta_tools(inspector: list[str], server: LiveServer) -> None:
    listed = inspect(inspector, server, "--method", "tools/list")
    assert [tool["name"] for tool in listed["tools"]] == ["search_capabilities", "execute_capability"]


def test_inspector_executes_a_capability(inspector: list[str], server: LiveServer) -> None:
    body = json.dumps({"content": "Saved by the MCP Inspector", "tags": ["inspector"]})
    called = inspect(
        inspector, server, "--method", "tools/call", "--tool-name", "execute_capability",
        "--tool-arg", "name=postMemory", f"body={body}",
    )
    assert called.get("isError") is not True, called
    assert called["structuredContent"]["content"] == "Saved by the MCP Inspector"


def test_inspector_shows_a_direct_tool_failure_instead_of_rejecting_it(inspector: list[str], direct_server: LiveServer) -> None:
    missing = json.dumps({"memory_id": "A" * 21})
    called = inspect(
        inspector, direct_server, "--method", "tools/call", "--tool-name", "getMemory", "--tool-arg", f"path={missing}",
        tool_failed=True,
    )
    assert called["isError"] is True and "structuredContent" not in called, called
    assert json.loads(called["content"][0]["text"])["code"] == "not_found"
