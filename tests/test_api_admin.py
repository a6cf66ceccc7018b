"""The admin API over REST and MCP: an org's tokens and agents, only ever the caller's own org.

Each case runs on both backends (the ``database_url`` fixture) against the real app.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from memory_bank.app import create_app
from memory_bank.generated.spec import SPEC
from memory_bank.settings import Settings
from memory_bank.store.tables import AuditEventRow
from memory_bank.store.tokens import TokenStore
from support.mcp_live import call_tool

ADMIN = ["memory:admin"]
READ_WRITE = ["memory:read", "memory:write"]
INVALID_TOKEN = 'error="invalid_token"'
#: Every admin operation, with an argument its path needs (an id nobody has).
ADMIN_OPERATIONS = [
    (method.upper(), path.replace("{token_id}", "AAAAAAAAAAAAAAAAAAAAA").replace("{agent_id}", "nobody"), op["operationId"])
    for path, item in SPEC["paths"].items()
    if path.startswith("/v1/admin/")
    for method, op in item.items()
    if method in ("get", "post", "delete")
]
BODIES = {"createToken": {"name": "x", "permissions": ["memory:read"]}, "createAgent": {"name": "x"}}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def admin(app: FastAPI, client: TestClient, make_token: Any) -> TestClient:
    """An admin of acme, with no agent of its own."""
    return TestClient(app, headers=bearer(make_token("acme", "root", ADMIN, None)))


def test_an_admin_creates_lists_rotates_and_revokes_a_token_and_its_secret_is_shown_once(
    admin: TestClient, client: TestClient
) -> None:
    created = admin.post(
        "/v1/admin/tokens",
        json={"name": "ci deploys", "permissions": ["memory:read"], "user_id": "ci", "expires_in_seconds": 3600},
    )
    assert created.status_code == 201, created.text
    secret, token = created.json()["secret"], created.json()["token"]
    assert secret.startswith(token["prefix"]) and len(token["prefix"]) == len("mb_") + 6
    assert (token["name"], token["user_id"], token["agent_id"], token["permissions"]) == ("ci deploys", "ci", None, ["memory:read"])
    assert token["expires_at"] is not None and token["revoked_at"] is None
    assert client.get("/v1/memory", headers=bearer(secret)).status_code == 200

    listed = admin.get("/v1/admin/tokens")
    assert token["id"] in [t["id"] for t in listed.json()["items"]] and secret not in listed.text
    fetched = admin.get(f"/v1/admin/tokens/{token['id']}").json()
    assert "secret" not in fetched and fetched["last_used_at"] is not None  # it was used just now

    rotated = admin.post(f"/v1/admin/tokens/{token['id']}/rotate")
    assert rotated.status_code == 200, rotated.text
    new_secret = rotated.json()["secret"]
    assert rotated.json()["token"]["id"] == token["id"] and rotated.json()["token"]["permissions"] == ["memory:read"]
    assert rotated.json()["token"]["prefix"] == new_secret[:9] != token["prefix"]
    old = client.get("/v1/memory", headers=bearer(secret))
    assert old.status_code == 401 and INVALID_TOKEN in old.headers["www-authenticate"]
    assert client.get("/v1/memory", headers=bearer(new_secret)).status_code == 200

    assert admin.delete(f"/v1/admin/tokens/{token['id']}").status_code == 204
    assert client.get("/v1/memory", headers=bearer(new_secret)).status_code == 401
    assert admin.get(f"/v1/admin/tokens/{token['id']}").json()["revoked_at"] is not None
    assert token["id"] not in [t["id"] for t in admin.get("/v1/admin/tokens").json()["items"]]
    assert token["id"] in [t["id"] for t in admin.get("/v1/admin/tokens?include_revoked=true").json()["items"]]
    again = admin.delete(f"/v1/admin/tokens/{token['id']}")
    assert again.status_code == 404 and again.json()["code"] == "not_found"
    assert admin.post(f"/v1/admin/tokens/{token['id']}/rotate").status_code == 404


def test_another_orgs_tokens_and_agents_are_404_and_a_token_is_minted_in_the_callers_org_only(
    admin: TestClient, engine: Engine, app: FastAPI, make_token: Any
) -> None:
    _, theirs = TokenStore(engine).create("globex", "gus", "globex-bot", READ_WRITE)
    for method, path in [
        ("GET", f"/v1/admin/tokens/{theirs.id}"),
        ("DELETE", f"/v1/admin/tokens/{theirs.id}"),
        ("POST", f"/v1/admin/tokens/{theirs.id}/rotate"),
        ("POST", "/v1/admin/agents/globex-bot/deactivate"),
        ("POST", "/v1/admin/agents/globex-bot/reactivate"),
    ]:
        answer = admin.request(method, path)
        assert (answer.status_code, answer.json()["code"]) == (404, "not_found"), (method, path)
    assert theirs.id not in admin.get("/v1/admin/tokens?include_revoked=true").text
    assert "globex-bot" not in admin.get("/v1/admin/agents").text
    assert TokenStore(engine).find(theirs.id).revoked_at is None  # type: ignore[union-attr]

    smuggled = admin.post("/v1/admin/tokens", json={"name": "x", "permissions": ADMIN, "org_id": "globex"})
    assert smuggled.status_code == 422 and smuggled.json()["errors"][0]["field"] == "/body/org_id"
    minted = admin.post("/v1/admin/tokens", json={"name": "x", "permissions": ADMIN}).json()
    assert TokenStore(engine).find(minted["token"]["id"], "acme") is not None
    assert TokenStore(engine).find(minted["token"]["id"], "globex") is None


@pytest.mark.parametrize(("method", "path", "operation_id"), ADMIN_OPERATIONS, ids=[o[2] for o in ADMIN_OPERATIONS])
def test_a_token_without_memory_admin_is_403_on_every_admin_operation(
    app: FastAPI, client: TestClient, make_token: Any, method: str, path: str, operation_id: str
) -> None:
    writer = make_token("acme", "ann", READ_WRITE)
    answer = client.request(method, path, headers=bearer(writer), json=BODIES.get(operation_id))
    assert (answer.status_code, answer.json()["code"]) == (403, "permission_denied")
    assert "memory:admin" in answer.json()["detail"]


def test_an_expired_token_is_401_invalid_token_over_rest_and_mcp(
    engine: Engine, client: TestClient, settings: Settings, app: FastAPI
) -> None:
    expired, _ = TokenStore(engine).create("acme", "ann", None, READ_WRITE, expires_at=datetime.now(UTC) - timedelta(seconds=1))
    rest = client.get("/v1/memory", headers=bearer(expired))
    assert (rest.status_code, rest.json()["code"]) == (401, "unauthorized")
    assert "expired" in rest.json()["detail"] and INVALID_TOKEN in rest.headers["www-authenticate"]
    with TestClient(app, base_url=settings.public_url) as mcp:
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        answer = mcp.post("/mcp", json=message, headers=bearer(expired) | {"Accept": "application/json, text/event-stream"})
    assert answer.status_code == 401 and INVALID_TOKEN in answer.headers["www-authenticate"]


def test_an_admin_deactivates_and_reactivates_an_agent_and_writes_follow(admin: TestClient, client: TestClient, make_token: Any) -> None:
    agent = admin.post("/v1/admin/agents", json={"name": "build server"})
    assert agent.status_code == 201 and agent.json()["active"] is True
    agent_id = agent.json()["id"]
    writer = bearer(make_token("acme", "ann", READ_WRITE, agent_id))
    assert client.post("/v1/memory", json={"content": "one"}, headers=writer).status_code == 201

    off = admin.post(f"/v1/admin/agents/{agent_id}/deactivate")
    assert off.status_code == 200 and off.json()["active"] is False
    refused = client.post("/v1/memory", json={"content": "two"}, headers=writer)
    assert (refused.status_code, refused.json()["code"]) == (403, "permission_denied")
    assert [a["active"] for a in admin.get("/v1/admin/agents").json()["items"] if a["id"] == agent_id] == [False]

    on = admin.post(f"/v1/admin/agents/{agent_id}/reactivate")
    assert on.status_code == 200 and on.json()["active"] is True
    assert client.post("/v1/memory", json={"content": "two"}, headers=writer).status_code == 201


@pytest.mark.parametrize("agent_id", ["team/bot", "a/b/c", "trailing/"])
def test_an_agent_whose_id_holds_a_slash_is_deactivated_and_reactivated_by_its_encoded_path(
    admin: TestClient, client: TestClient, make_token: Any, agent_id: str
) -> None:
    """Owner ids may hold ``/``, and Starlette decodes ``%2F`` before it routes: such an agent
    matched no route, so an admin without a shell could not stop it (a hostile pass)."""
    minted = admin.post("/v1/admin/tokens", json={"name": "x", "permissions": ["memory:write"], "agent_id": agent_id})
    assert minted.status_code == 201, minted.text
    writer = bearer(minted.json()["secret"])
    path = quote(agent_id, safe="")
    off = admin.post(f"/v1/admin/agents/{path}/deactivate")
    assert off.status_code == 200 and off.json() == off.json() | {"id": agent_id, "active": False}, off.text
    assert client.post("/v1/memory", json={"content": "stopped"}, headers=writer).status_code == 403
    assert admin.post(f"/v1/admin/agents/{path}/reactivate").json()["active"] is True
    assert client.post("/v1/memory", json={"content": "going again"}, headers=writer).status_code == 201


def test_a_token_for_an_agent_s_name_instead_of_its_id_is_409_naming_the_id(admin: TestClient) -> None:
    """``createAgent`` answers a random id; a token minted for the agent's name registered a second
    agent of that name and acted as it, untouched by deactivating the first (a new user's pass).
    A new id that is no agent's name is still registered."""
    agent_id = admin.post("/v1/admin/agents", json={"name": "ci-bot"}).json()["id"]
    refused = admin.post("/v1/admin/tokens", json={"name": "ci", "permissions": ["memory:read"], "agent_id": "ci-bot"})
    assert (refused.status_code, refused.json()["code"]) == (409, "conflict")  # schema-valid: a clash with that agent
    assert agent_id in refused.json()["detail"] and refused.json()["errors"][0]["field"] == "/body/agent_id"
    assert [a["name"] for a in admin.get("/v1/admin/agents").json()["items"]].count("ci-bot") == 1

    by_id = admin.post("/v1/admin/tokens", json={"name": "ci", "permissions": ["memory:read"], "agent_id": agent_id})
    new = admin.post("/v1/admin/tokens", json={"name": "nightly", "permissions": ["memory:read"], "agent_id": "nightly"})
    assert (by_id.status_code, new.status_code) == (201, 201)


def test_over_mcp_an_admin_reads_tokens_and_agents_but_cannot_mint_rotate_or_revoke(
    app: FastAPI, settings: Settings, make_token: Any
) -> None:
    root = make_token("acme", "root", ADMIN, None)
    writer = make_token("acme", "ann", READ_WRITE)
    with TestClient(app, base_url=settings.public_url) as mcp:
        listed = call_tool(mcp, root, "execute_capability", {"name": "listTokens"})
        assert not listed.get("isError"), listed
        ids = [t["id"] for t in listed["structuredContent"]["items"]]
        assert len(ids) == 2 and writer not in json.dumps(listed)
        one = call_tool(mcp, root, "execute_capability", {"name": "getToken", "path": {"token_id": ids[1]}})
        assert one["structuredContent"]["user_id"] == "ann"
        agents = call_tool(mcp, root, "execute_capability", {"name": "listAgents"})
        assert [a["id"] for a in agents["structuredContent"]["items"]] == ["agent-1"]

        cards = call_tool(mcp, root, "search_capabilities", {"query": "create a new api token", "limit": 20})
        names = [card["name"] for card in cards["structuredContent"]["results"]]
        assert not {"createToken", "rotateToken", "revokeToken"} & set(names)
        for name in ("createToken", "rotateToken", "revokeToken", "deactivateAgent"):
            hidden = call_tool(mcp, root, "execute_capability", {"name": name})
            assert hidden.get("isError") and json.loads(hidden["content"][0]["text"])["code"] == "not_found", name

        denied = call_tool(mcp, writer, "execute_capability", {"name": "listTokens"})
        assert json.loads(denied["content"][0]["text"])["code"] == "permission_denied"
        unseen = call_tool(mcp, writer, "search_capabilities", {"query": "list our api tokens", "limit": 20})
        assert all(card["category"] != "Admin" for card in unseen["structuredContent"]["results"])


def test_each_admin_call_is_audited_by_operation_token_and_outcome(settings: Settings) -> None:
    app = create_app(settings)
    try:
        root, row = TokenStore(app.state.engine).create("acme", "root", None, ADMIN)
        with TestClient(app) as client:
            client.post("/v1/admin/tokens", json={"name": "n", "permissions": ["memory:read"]}, headers=bearer(root))
            client.get("/v1/admin/tokens/AAAAAAAAAAAAAAAAAAAAA", headers=bearer(root))
        with app.state.engine.connect() as connection:
            events = connection.execute(
                sa.select(AuditEventRow.tool_name, AuditEventRow.success, AuditEventRow.error_code, AuditEventRow.token_id)
                .where(AuditEventRow.token_id == row.id)
                .order_by(AuditEventRow.pk)
            ).all()
        assert [tuple(e) for e in events] == [("createToken", True, None, row.id), ("getToken", False, "not_found", row.id)]
    finally:
        app.state.engine.dispose()


@pytest.mark.parametrize("name", ["\x1b[2J\x1b[31mPWNED", "ok\nforged row", "bell\x07", "c1\x9b31m"])
def test_a_name_holding_control_characters_is_refused_as_operators_read_names_in_a_terminal(admin: TestClient, name: str) -> None:
    for path, body in (("/v1/admin/tokens", {"name": name, "permissions": ["memory:read"]}), ("/v1/admin/agents", {"name": name})):
        refused = admin.post(path, json=body)
        assert refused.status_code == 422 and refused.json()["code"] == "invalid_params", refused.text
    assert admin.post("/v1/admin/agents", json={"name": "zażółć 🦄 bot"}).status_code == 201  # any other Unicode is a name
