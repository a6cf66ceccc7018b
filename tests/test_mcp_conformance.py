"""The MCP conformance suite (npm ``@modelcontextprotocol/conformance``) against the running server.

The suite cannot send a bearer token, and ``/mcp`` keeps requiring one: it talks to
``tests/support/bearer_proxy.py``, which adds the token and passes every other header,
``Host`` and ``Origin`` included, through unchanged, so ``dns-rebinding-protection``
tests the server's own check. ``.ci/run`` installs the suite (with Node 22) under
``.ci/node``; elsewhere these tests skip with the install command, except under
CI=true, where a missing suite is a failure.

Memory Bank is a tools-only server (two meta-tools, or one tool per operation), stateless,
answering JSON. Every server scenario of the pinned suite is classified below: those
that apply must pass; the others test a feature this server does not offer, each for
the reason given. A suite that adds a scenario fails ``test_every_scenario_is_classified``
until someone decides which list it belongs to.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from support.backends import free_port
from support.bearer_proxy import BearerProxy
from support.mcp_live import LiveServer, live_server, serving
from support.requirements import need

BIN = Path(__file__).resolve().parents[1] / ".ci" / "node" / "node_modules" / ".bin"
PACKAGE = "@modelcontextprotocol/conformance@0.1.16"
INSTALL = f"npm install --prefix .ci/node node@22 {PACKAGE}"

APPLICABLE = ("server-initialize", "ping", "tools-list", "dns-rebinding-protection")

_FIXTURE_TOOL = "calls a fixture tool of the suite's reference server ({}), which a memory service does not have"
NOT_APPLICABLE = {
    "logging-set-level": "the server declares no logging capability (logging/setLevel is -32601)",
    "completion-complete": "the server declares no completions capability (no prompts or resource templates)",
    "tools-call-simple-text": _FIXTURE_TOOL.format("test_simple_text"),
    "tools-call-image": _FIXTURE_TOOL.format("test_image_content"),
    "tools-call-audio": _FIXTURE_TOOL.format("test_audio_content"),
    "tools-call-embedded-resource": _FIXTURE_TOOL.format("test_embedded_resource"),
    "tools-call-mixed-content": _FIXTURE_TOOL.format("test_multiple_content_types"),
    "tools-call-with-logging": _FIXTURE_TOOL.format("test_tool_with_logging") + "; needs logging too",
    "tools-call-error": _FIXTURE_TOOL.format("test_error_handling"),
    "tools-call-with-progress": _FIXTURE_TOOL.format("test_tool_with_progress"),
    "tools-call-sampling": _FIXTURE_TOOL.format("test_sampling") + "; stateless, so no back channel for sampling",
    "tools-call-elicitation": _FIXTURE_TOOL.format("test_elicitation") + "; stateless, so no back channel",
    "json-schema-2020-12": _FIXTURE_TOOL.format("json_schema_2020_12_tool"),
    "elicitation-sep1034-defaults": _FIXTURE_TOOL.format("test_elicitation_sep1034_defaults"),
    "elicitation-sep1330-enums": _FIXTURE_TOOL.format("test_elicitation_sep1330_enums"),
    "server-sse-polling": "answers are JSON, never SSE, and GET opens no stream (stateless: 405)",
    "server-sse-multiple-streams": "needs sessions and SSE streams; the server is stateless and answers JSON",
    "resources-list": "the server offers no resources",
    "resources-read-text": "the server offers no resources",
    "resources-read-binary": "the server offers no resources",
    "resources-templates-read": "the server offers no resources",
    "resources-subscribe": "the server offers no resources",
    "resources-unsubscribe": "the server offers no resources",
    "prompts-list": "the server offers no prompts",
    "prompts-get-simple": "the server offers no prompts",
    "prompts-get-with-args": "the server offers no prompts",
    "prompts-get-embedded-resource": "the server offers no prompts",
    "prompts-get-with-image": "the server offers no prompts",
}


@pytest.fixture(scope="module")
def conformance() -> list[str]:
    installed = (BIN / "conformance").exists() and (BIN / "node").exists()
    need("the MCP conformance suite", installed, "it is not installed under .ci/node", INSTALL)
    return [str(BIN / "node"), str(BIN / "conformance")]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(tmp_path_factory.mktemp("conformance")) as live:
        yield live


@pytest.fixture(scope="module")
def proxied_mcp_url(server: LiveServer) -> Iterator[str]:
    """``/mcp`` through the proxy that adds a read/write token; the server itself is unchanged."""
    port = free_port()
    with serving(BearerProxy(server.url, server.token()), port):
        yield f"http://127.0.0.1:{port}/mcp"


def run_suite(conformance: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run([*conformance, *args], capture_output=True, text=True, timeout=300, env=env)


def test_every_scenario_is_classified(conformance: list[str]) -> None:
    listed = run_suite(conformance, "list", "--server")
    assert listed.returncode == 0, listed.stderr
    scenarios = re.findall(r"^\s+- (\S+)", listed.stdout, flags=re.MULTILINE)
    assert sorted(scenarios) == sorted([*APPLICABLE, *NOT_APPLICABLE])


def test_the_server_still_requires_a_token(server: LiveServer, proxied_mcp_url: str) -> None:
    request = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Accept": "application/json, text/event-stream"}
    direct = httpx.post(server.mcp_url, json=request, headers=headers)
    proxied = httpx.post(proxied_mcp_url, json=request, headers=headers)
    assert direct.status_code == 401
    assert proxied.status_code == 200 and proxied.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}


@pytest.mark.parametrize("scenario", APPLICABLE)
def test_scenario_passes(conformance: list[str], proxied_mcp_url: str, scenario: str, tmp_path: Path) -> None:
    done = run_suite(conformance, "server", "--url", proxied_mcp_url, "--scenario", scenario, "-o", str(tmp_path))
    [results] = tmp_path.glob("*/checks.json")
    checks = json.loads(results.read_text())
    failures = [(c["id"], c.get("errorMessage"), c.get("details")) for c in checks if c["status"] != "SUCCESS"]
    assert checks and not failures, failures
    assert done.returncode == 0, done.stdout + done.stderr
