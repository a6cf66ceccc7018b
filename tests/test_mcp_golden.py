"""Golden snapshots of ``tools/list`` as a real MCP client receives it.

A tool's name, description or schema is an agent-facing contract: a change must be
a visible diff in review, not a side effect. Regenerate after an intended change:
``UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_mcp_golden.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memory_bank.settings import McpToolsMode
from support.mcp_live import live_server

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("mode", [McpToolsMode.meta, McpToolsMode.both])
async def test_tools_list_matches_golden(tmp_path: Path, mode: McpToolsMode) -> None:
    with live_server(tmp_path, mode) as server:
        async with server.client(server.token(perms=["memory:admin"])) as client:
            listed = await client.list_tools()
    tools = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools]
    text = json.dumps(tools, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    golden = GOLDEN / f"tools_list_{mode.value}.json"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        golden.write_text(text, encoding="utf-8")
    assert golden.is_file(), f"{golden.name} is missing: run with UPDATE_GOLDEN=1"
    assert text == golden.read_text(encoding="utf-8"), "tools/list changed; if intended, rerun with UPDATE_GOLDEN=1"
