"""``tools/list`` as a real MCP client receives it: a golden for the meta-tools, the catalog for the rest.

A tool's name, description or schema is an agent-facing contract: a change must be
a visible diff in review, not a side effect. The two meta-tools are a golden snapshot;
regenerate it after an intended change:
``UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_mcp_golden.py``. The direct
tools are checked against the catalog they come from, so adding an operation to the
spec needs no golden edit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from memory_bank.generated.catalog import CAPABILITIES
from memory_bank.settings import McpToolsMode
from support.mcp_live import live_server

GOLDEN = Path(__file__).parent / "golden"


async def _listed(tmp_path: Path, mode: McpToolsMode) -> list[dict[str, Any]]:
    with live_server(tmp_path, mode) as server:
        async with server.client(server.token(perms=["memory:admin"])) as client:
            listed = await client.list_tools()
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools]


def _as_text(tools: list[dict[str, Any]]) -> str:
    return json.dumps(tools, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


async def test_the_meta_tools_match_the_golden(tmp_path: Path) -> None:
    text = _as_text(await _listed(tmp_path, McpToolsMode.meta))
    golden = GOLDEN / "tools_list_meta.json"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        golden.write_text(text, encoding="utf-8")
    assert golden.is_file(), f"{golden.name} is missing: run with UPDATE_GOLDEN=1"
    assert text == golden.read_text(encoding="utf-8"), "tools/list changed; if intended, rerun with UPDATE_GOLDEN=1"


def _direct(capability: dict[str, Any]) -> dict[str, Any]:
    """A catalog entry as its own tool: the catalog's words and schemas, unchanged."""
    tool = {key: capability[key] for key in ("name", "title", "description", "inputSchema")}
    if capability["outputSchema"]:
        tool["outputSchema"] = capability["outputSchema"]
    return {**tool, "annotations": capability["annotations"]}


async def test_both_lists_the_meta_tools_then_every_exposed_operation_as_the_catalog_says(tmp_path: Path) -> None:
    tools = await _listed(tmp_path, McpToolsMode.both)
    meta = json.loads((GOLDEN / "tools_list_meta.json").read_text(encoding="utf-8"))
    assert tools[: len(meta)] == meta
    assert tools[len(meta) :] == [_direct(c) for c in CAPABILITIES if c["policy"]["expose"]]
