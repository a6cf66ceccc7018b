"""``mcp-remote`` (npm), given only the ``/mcp`` URL, signs in at a real authorization server on its own.

The bridge local-only MCP clients use: it speaks stdio to the client and OAuth plus
streamable HTTP to the server. It discovers the authorization server from the 401 and the
protected-resource document, registers itself, and opens the authorization URL in "the
browser": here ``$BROWSER``, a script that follows the URL with httpx, through the
authorization server's automatic consent, to mcp-remote's own callback listener.
``.ci/run`` installs it under ``.ci/node``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from support.mcp_live import live_server
from support.oauth_server import AuthorizationServerOnLoopback, User, agent_of
from support.requirements import need

BIN = Path(__file__).resolve().parents[1] / ".ci" / "node" / "node_modules" / ".bin"
INSTALL = "npm install --prefix .ci/node mcp-remote@0.15"

BROWSER = """#!{python}
import sys
import time
import httpx

# The person signs in and consents (automatic here) ...
consent = httpx.get(sys.argv[1], timeout=30)
callback = consent.headers["location"]
# ... and the browser follows the redirect to mcp-remote's callback, which mcp-remote starts
# listening on only after it has launched the browser: a person is never that quick, a script is.
for _ in range(120):
    try:
        sys.exit(0 if httpx.get(callback, timeout=30).status_code < 400 else 1)
    except httpx.ConnectError:
        time.sleep(0.25)
sys.exit(1)
"""


def ok(result: Any) -> Any:
    assert not result.is_error, result.content
    return result.structured_content


async def test_mcp_remote_without_a_header_signs_in_and_saves_and_finds_a_memory(tmp_path: Path) -> None:
    need("mcp-remote", (BIN / "mcp-remote").exists(), "it is not installed under .ci/node", INSTALL)
    browser = tmp_path / "browser"
    browser.write_text(BROWSER.format(python=sys.executable))
    browser.chmod(0o755)
    authorization = AuthorizationServerOnLoopback(User(sub="ada", org_id="acme"))
    with authorization.running(), live_server(tmp_path, oauth_issuer=authorization.url) as server:
        authorization.user = agent_of(server.app, authorization.user)
        env = {
            "PATH": f"{BIN}:{os.environ['PATH']}",
            "HOME": str(tmp_path),
            "MCP_REMOTE_CONFIG_DIR": str(tmp_path / "mcp-auth"),
            "BROWSER": str(browser),
        }
        bridge = StdioServerParameters(command=str(BIN / "mcp-remote"), args=[server.mcp_url, "--host", "127.0.0.1"], env=env)
        with anyio.fail_after(120):  # a sign-in that never completes fails here instead of hanging the suite
            async with Client(bridge) as client:
                found = ok(await client.call_tool("search_capabilities", {"query": "remember a fact"}))
                saved = ok(await client.call_tool("execute_capability", {"name": "postMemory", "body": {"content": "lunch is at noon"}}))
                hits = ok(await client.call_tool("execute_capability", {"name": "getMemorySearch", "query": {"q": "lunch noon"}}))
    assert "postMemory" in [card["name"] for card in found["results"]]
    assert saved["user_id"] == "ada" and [hit["id"] for hit in hits["results"]] == [saved["id"]]
    assert len(authorization.clients) == 1  # it registered itself
