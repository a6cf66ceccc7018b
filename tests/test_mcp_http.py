"""MCP over streamable HTTP, through mcp.Client against a real uvicorn server.

Listing, searching (with permission filtering), executing every exposed operation,
each failure code an agent can meet, and isolation between organisations.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import sqlalchemy as sa
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult

from memory_bank.generated.catalog import CAPABILITIES
from memory_bank.settings import McpToolsMode
from memory_bank.store.tables import AuditEventRow
from support.mcp_live import LiveServer, live_server, tool_problem

CATALOG = {c["name"]: c for c in CAPABILITIES if c["policy"]["expose"]}
META_TOOLS = ("search_capabilities", "execute_capability")
WRITE_OPERATIONS = {name for name, c in CATALOG.items() if c["policy"]["permission"] != "memory:read"}
#: What a read/write token (``LiveServer.token``'s default) may call: all but the admin operations.
READ_WRITE_CATALOG = {name: c for name, c in CATALOG.items() if c["policy"]["permission"] != "memory:admin"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(tmp_path_factory.mktemp("mcp-http")) as live:
        yield live


@pytest.fixture(scope="module")
def direct_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(tmp_path_factory.mktemp("mcp-direct"), McpToolsMode.direct) as live:
        yield live


def ok(result: CallToolResult) -> Any:
    assert not result.is_error, result.structured_content
    return result.structured_content


def failed(result: CallToolResult, code: str) -> dict[str, Any]:
    """The problem of a failed call: text only, so no client checks it against an outputSchema."""
    assert "Traceback" not in result.content[0].text
    problem = tool_problem(result)
    assert problem["code"] == code, problem
    return problem


async def test_lists_the_two_meta_tools(server: LiveServer) -> None:
    async with server.client(server.token()) as client:
        tools = (await client.list_tools()).tools
    assert [t.name for t in tools] == ["search_capabilities", "execute_capability"]
    assert tools[0].input_schema["required"] == ["query"]
    assert tools[1].input_schema["required"] == ["name"]


async def test_search_finds_memory_search_with_cards(server: LiveServer) -> None:
    async with server.client(server.token()) as client:
        found = ok(await client.call_tool("search_capabilities", {"query": "search my memories"}))
    assert found["total"] == len(READ_WRITE_CATALOG)
    assert "getMemorySearch" in [card["name"] for card in found["results"]]
    card = next(c for c in found["results"] if c["name"] == "getMemorySearch")
    assert card["permission"] == "memory:read" and card["category"] == "Memory"
    assert 0 < card["score"] <= 1 and card["inputSchema"] is None
    assert {"name", "title", "summary", "required"} <= card.keys()


async def test_search_options_schema_category_and_listing(server: LiveServer) -> None:
    async with server.client(server.token()) as client:
        save = ok(await client.call_tool("search_capabilities", {"query": "save a memory", "limit": 1, "include_schema": True}))
        listing = ok(await client.call_tool("search_capabilities", {"query": ""}))
        other = await client.call_tool("search_capabilities", {"query": "", "category": "Nothing"})
    [card] = save["results"]
    assert card["name"] == "postMemory" and card["required"] == ["body.content"]
    assert card["inputSchema"] == CATALOG["postMemory"]["inputSchema"]
    assert len(listing["results"]) == listing["total"] == len(READ_WRITE_CATALOG)
    assert all(c["score"] is None for c in listing["results"])
    categories = [c["category"] for c in listing["results"]]
    assert categories == sorted(categories)
    assert other.is_error and "no category is named 'Nothing'; there are Admin, Memory" in other.content[0].text


@pytest.mark.parametrize("query", ["", "save a memory", "delete forget memory", "change a memory", "feedback helped"])
async def test_read_only_token_never_sees_write_capabilities(server: LiveServer, query: str) -> None:
    async with server.client(server.token(perms=["memory:read"])) as client:
        found = ok(await client.call_tool("search_capabilities", {"query": query, "limit": 20}))
    assert found["total"] == len(CATALOG) - len(WRITE_OPERATIONS)
    assert not {c["name"] for c in found["results"]} & WRITE_OPERATIONS
    assert all(c["permission"] == "memory:read" for c in found["results"])


async def test_direct_mode_lists_only_allowed_operations_with_catalog_schemas(direct_server: LiveServer) -> None:
    async with direct_server.client(direct_server.token()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == set(READ_WRITE_CATALOG)
    for name, tool in tools.items():
        assert tool.input_schema == CATALOG[name]["inputSchema"]
        assert tool.output_schema == CATALOG[name]["outputSchema"]
    async with direct_server.client(direct_server.token(perms=["memory:read"])) as client:
        names = {t.name for t in (await client.list_tools()).tools}
    assert names == set(CATALOG) - WRITE_OPERATIONS


async def test_the_handshake_names_only_tools_the_mode_lists(
    server: LiveServer, direct_server: LiveServer, tmp_path: Path
) -> None:
    """Direct mode told agents to use search_capabilities, which it does not list (Unknown tool);
    both modes named only the meta-tools."""
    with live_server(tmp_path, McpToolsMode.both) as both:
        for live in (server, direct_server, both):
            async with live.client(live.token()) as client:
                listed = {t.name for t in (await client.list_tools()).tools}
                instructions = client.instructions or ""
            words = [word.strip(".,()") for word in instructions.split()]
            named = {word for word in words if "_" in word or word[:1].islower() and any(c.isupper() for c in word)}
            assert named and named <= listed, (named, listed)
            assert ({"search_capabilities", "postMemory"} <= named) == (live is both)


async def test_direct_tool_runs_the_same_path(direct_server: LiveServer) -> None:
    async with direct_server.client(direct_server.token()) as client:
        saved = ok(await client.call_tool("postMemory", {"body": {"content": "direct tools work too"}}))
        assert ok(await client.call_tool("getMemory", {"path": {"memory_id": saved["id"]}}))["id"] == saved["id"]
        with pytest.raises(MCPError, match="Unknown tool"):
            await client.call_tool("execute_capability", {"name": "getMemory"})


class Run:
    """``execute_capability`` for one client, checking each result against the catalog's outputSchema."""

    def __init__(self, client: Any) -> None:
        self.client = client

    async def __call__(self, name: str, **groups: Any) -> Any:
        result = await self.client.call_tool("execute_capability", {"name": name, **groups})
        body = ok(result)
        schema = CATALOG[name]["outputSchema"]
        if schema is not None:
            jsonschema.validate(body, schema)
        return body


async def test_the_memory_operations_chain_over_mcp(server: LiveServer) -> None:
    async with server.client(server.token()) as client:
        run = Run(client)
        saved = await run("postMemory", header={"Idempotency-Key": "k-1"}, body={"content": "The user edits with Helix", "tags": ["editor"]})
        memory = {"memory_id": saved["id"]}
        assert (await run("getMemory", path=memory))["content"] == "The user edits with Helix"
        assert [m["id"] for m in (await run("listMemories", query={"tags": ["editor"]}))["items"]] == [saved["id"]]
        hits = (await run("getMemorySearch", query={"q": "helix editor", "limit": 5}))["results"]
        assert hits[0]["id"] == saved["id"] and 0 < hits[0]["score"] <= 1
        changed = await run("patchMemory", path=memory, body={"content": "The user edits with Helix and Zed"})
        assert changed["version"] == 2
        assert [m["version"] for m in (await run("getMemoryHistory", path={"memory_id": changed["id"]}))["result"]] == [1, 2]
        assert (await run("postMemoryFeedback", path={"memory_id": changed["id"]}, body={"feedback": "helpful"}))["feedback"] == "helpful"
        keypath = {"keypath": "user.preferences.editor"}
        assert (await run("putMemoryKeypath", path=keypath, body={"content": "helix"}))["keypath"] == keypath["keypath"]
        assert (await run("getMemoryKeypath", path=keypath))["content"] == "helix"
        deleted = await client.call_tool("execute_capability", {"name": "deleteMemory", "path": {"memory_id": changed["id"]}})
        assert not deleted.is_error and deleted.structured_content is None
        failed(await client.call_tool("execute_capability", {"name": "getMemory", "path": {"memory_id": changed["id"]}}), "not_found")


async def test_string_encoded_groups_are_parsed(server: LiveServer) -> None:
    async with server.client(server.token()) as client:
        saved = ok(await client.call_tool("execute_capability", {"name": "postMemory", "body": json.dumps({"content": "sent as text"})}))
        found = ok(await client.call_tool("execute_capability", {"name": "getMemory", "path": json.dumps({"memory_id": saved["id"]})}))
    assert found["content"] == "sent as text"


async def test_http_401_without_or_with_a_bad_token(server: LiveServer) -> None:
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient() as http:
        missing = await http.post(server.mcp_url, json=request, headers=headers)
        bad = await http.post(server.mcp_url, json=request, headers={**headers, "Authorization": "Bearer mb_nope"})
        document = (await http.get(server.url + "/.well-known/oauth-protected-resource")).json()
    metadata_url = f"{server.url}/.well-known/oauth-protected-resource"
    for response in (missing, bad):
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith(f'Bearer resource_metadata="{metadata_url}"')
        assert response.json()["code"] == "unauthorized"
    assert 'error="invalid_token"' in bad.headers["www-authenticate"]
    assert document == {
        "resource": server.mcp_url,
        "resource_name": "Memory Bank",
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["memory:admin", "memory:read", "memory:write"],
    }


async def test_revoked_token_is_unauthorized_on_the_next_call(server: LiveServer) -> None:
    plaintext, record = server.app.state.tokens.create("org-revoke", "ann", "agent-1", ["memory:read"])
    async with server.client(plaintext) as client:
        ok(await client.call_tool("execute_capability", {"name": "listMemories"}))
        server.app.state.tokens.revoke(record.id)
        with pytest.raises(MCPError):  # the next HTTP request is a 401, refused before MCP sees it
            await client.call_tool("execute_capability", {"name": "listMemories"})


async def test_permission_denied(server: LiveServer) -> None:
    async with server.client(server.token(perms=["memory:read"])) as client:
        problem = failed(await client.call_tool("execute_capability", {"name": "postMemory", "body": {"content": "x"}}), "permission_denied")
    assert "memory:write" in problem["detail"]


async def test_not_found_for_unknown_capability_and_memory(server: LiveServer) -> None:
    async with server.client(server.token()) as client:
        failed(await client.call_tool("execute_capability", {"name": "launchRocket"}), "not_found")
        failed(await client.call_tool("execute_capability", {"name": "getMemory", "path": {"memory_id": "A" * 21}}), "not_found")
        kept_off = failed(await client.call_tool("execute_capability", {"name": "exportMemories"}), "not_found")
        miscased = failed(await client.call_tool("execute_capability", {"name": "EXPORTMEMORIES"}), "not_found")
    assert kept_off["detail"] == "'exportMemories' is not offered to agents (REST only: GET /v1/memory/export); search_capabilities lists what is"
    assert miscased["detail"] == kept_off["detail"]


async def test_invalid_params_name_pointer_rule_and_type(server: LiveServer) -> None:
    body = {"content": "ok", "tags": ["a", "b", "c", 7], "confidence": "high", "colour": "red"}
    async with server.client(server.token()) as client:
        problem = failed(await client.call_tool("execute_capability", {"name": "postMemory", "body": body}), "invalid_params")
        no_body = failed(await client.call_tool("execute_capability", {"name": "postMemory"}), "invalid_params")
        bad_limit = failed(await client.call_tool("search_capabilities", {"query": "x", "limit": 50}), "invalid_params")
    errors = {e["field"]: e for e in problem["errors"]}
    assert errors["/body/tags/3"]["rule"] == "type" and "integer" in errors["/body/tags/3"]["message"]
    assert errors["/body/confidence"]["rule"] == "type" and "string" in errors["/body/confidence"]["message"]
    assert errors["/body/colour"]["rule"] == "additionalProperties"
    assert [(e["field"], e["rule"]) for e in no_body["errors"]] == [("/body", "required")]
    assert [(e["field"], e["rule"]) for e in bad_limit["errors"]] == [("/limit", "maximum")]


async def test_a_field_over_its_bound_is_invalid_params(server: LiveServer) -> None:
    async with server.client(server.token()) as client:
        long = failed(await client.call_tool("execute_capability", {"name": "postMemory", "body": {"content": "x" * 8001}}), "invalid_params")
        many = failed(await client.call_tool("execute_capability", {"name": "postMemory", "body": {"content": "x", "tags": ["t"] * 33}}), "invalid_params")
    assert [(e["field"], e["rule"]) for e in long["errors"]] == [("/body/content", "maxLength")]
    assert [(e["field"], e["rule"]) for e in many["errors"]] == [("/body/tags", "maxItems")]


async def test_two_orgs_are_isolated(server: LiveServer) -> None:
    async with server.client(server.token("org-a")) as alice, server.client(server.token("org-b")) as bob:
        saved = ok(await alice.call_tool("execute_capability", {"name": "postMemory", "body": {"content": "Org A deploys on Fridays"}}))
        mine = ok(await alice.call_tool("execute_capability", {"name": "getMemorySearch", "query": {"q": "deploys fridays"}}))
        theirs = ok(await bob.call_tool("execute_capability", {"name": "getMemorySearch", "query": {"q": "deploys fridays"}}))
        memory = {"memory_id": saved["id"]}
        failed(await bob.call_tool("execute_capability", {"name": "getMemory", "path": memory}), "not_found")
        failed(await bob.call_tool("execute_capability", {"name": "deleteMemory", "path": memory}), "not_found")
        failed(await bob.call_tool("execute_capability", {"name": "patchMemory", "path": memory, "body": {"content": "hijack"}}), "not_found")
        still = ok(await alice.call_tool("execute_capability", {"name": "getMemory", "path": memory}))
    assert [h["id"] for h in mine["results"]] == [saved["id"]]
    assert theirs == {"results": []}
    assert still["content"] == "Org A deploys on Fridays"


async def test_a_search_query_that_looks_like_json_stays_text(server: LiveServer) -> None:
    async with server.client(server.token()) as client:
        found = ok(await client.call_tool("search_capabilities", {"query": '{"save": 1}'}))
    assert "postMemory" in [card["name"] for card in found["results"]]


async def test_every_tool_call_is_audited_even_when_it_fails_before_dispatch(server: LiveServer) -> None:
    org = "org-audit-mcp"
    async with server.client(server.token(org)) as client:
        failed(await client.call_tool("execute_capability", {"name": "noSuchCapability"}), "not_found")
        failed(await client.call_tool("execute_capability", {"name": "getMemory", "path": {"memory_id": 7}}), "invalid_params")
        ok(await client.call_tool("search_capabilities", {"query": "search my memories"}))

    expected = [
        ("execute_capability", False, "not_found"),  # no such capability: its name is not echoed
        ("execute_capability:getMemory", False, "invalid_params"),
        ("search_capabilities", True, None),
    ]
    statement = sa.select(AuditEventRow).where(AuditEventRow.org_id == org).order_by(AuditEventRow.pk)
    for _ in range(50):  # the writer thread flushes in the background
        with server.app.state.engine.connect() as connection:
            rows = [r._mapping for r in connection.execute(statement)]
        mcp_rows = [(r["tool_name"], r["success"], r["error_code"]) for r in rows if r["tool_name"].partition(":")[0] in META_TOOLS]
        if len(mcp_rows) >= len(expected):
            break
        await asyncio.sleep(0.1)
    assert mcp_rows == expected
    assert all(r["agent_id"] == "agent-1" and r["request_id"] for r in rows)
