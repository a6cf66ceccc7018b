"""The admin lists page like the memory list: REST through the app, on both backends, and over MCP.

The invariant (hypothesis): a client that follows ``next_cursor`` from the first page to
the last sees every row that existed when it started exactly once, in (created_at, id)
order, whatever the page size, however many rows share a timestamp, and however many
rows other requests insert between its pages.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import Engine
from sqlmodel import col
from typer.testing import CliRunner

from memory_bank.cli import app as cli_app
from memory_bank.settings import Settings
from memory_bank.store.database import transaction
from memory_bank.store.tables import AgentRow, TokenRow
from memory_bank.store.tokens import TokenStore
from support.mcp_live import call_tool
from support.owner_ids import takes_owner_id

ADMIN = ["memory:admin"]
PAGING = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
TIED = datetime(2026, 1, 1, 12, 0, 0)


#: Agent ids a token may name: any script, up to the column's 128 characters.
AGENT_IDS = st.text(min_size=1, max_size=128).filter(takes_owner_id)


def walk(admin: TestClient, path: str, limit: int, between: Callable[[], None]) -> list[dict[str, Any]]:
    """Every item of a list, page by page, calling ``between`` after each page as another client would insert."""
    seen: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        page = admin.get(path, params=params)
        assert page.status_code == 200, page.text
        assert len(page.json()["items"]) <= limit
        seen += page.json()["items"]
        cursor = page.json()["next_cursor"]
        if cursor is None:
            return seen
        between()


def tie(engine: Engine, table: type[TokenRow] | type[AgentRow], org: str) -> None:
    """Give every row of ``org`` one timestamp, so the id alone orders them."""
    with transaction(engine, write=True) as session:
        session.execute(sa.update(table).where(col(table.org_id) == org).values(created_at=TIED))


def in_key_order(items: list[dict[str, Any]]) -> bool:
    keys = [(datetime.fromisoformat(i["created_at"]), i["id"]) for i in items]
    return keys == sorted(keys)


@PAGING
@given(existing=st.integers(0, 9), limit=st.integers(1, 4), tied=st.booleans(), inserts=st.lists(st.integers(0, 3), max_size=6))
def test_every_token_exactly_once_across_pages_while_others_are_created(
    app: FastAPI, engine: Engine, existing: int, limit: int, tied: bool, inserts: list[int]
) -> None:
    org = f"org-{uuid.uuid4().hex[:8]}"
    tokens = TokenStore(engine)
    admin = TestClient(app, headers={"Authorization": f"Bearer {tokens.create(org, 'root', None, ADMIN)[0]}"})
    for n in range(existing):
        tokens.create(org, f"user-{n}", None, ["memory:read"])
    if tied:
        tie(engine, TokenRow, org)
    before = {row.id for row in session_rows(engine, TokenRow, org)}
    batches = iter(inserts)

    def insert() -> None:
        for _ in range(next(batches, 0)):
            made = admin.post("/v1/admin/tokens", json={"name": "meanwhile", "permissions": ["memory:read"]})
            assert made.status_code == 201, made.text

    seen = walk(admin, "/v1/admin/tokens", limit, insert)
    ids = [t["id"] for t in seen]
    assert len(ids) == len(set(ids)), "a token was listed twice"
    assert before <= set(ids), "a token that existed all along was skipped"
    assert set(ids) <= {row.id for row in session_rows(engine, TokenRow, org)}
    assert in_key_order(seen)


@PAGING
@given(ids=st.lists(AGENT_IDS, max_size=7, unique=True), limit=st.integers(1, 3), tied=st.booleans(), inserts=st.lists(st.integers(0, 2), max_size=5))
def test_every_agent_exactly_once_across_pages_whatever_its_id(
    app: FastAPI, engine: Engine, ids: list[str], limit: int, tied: bool, inserts: list[int]
) -> None:
    """Agent ids are in the cursor: any script, up to 128 characters, still pages."""
    org = f"org-{uuid.uuid4().hex[:8]}"
    tokens = TokenStore(engine)
    admin = TestClient(app, headers={"Authorization": f"Bearer {tokens.create(org, 'root', None, ADMIN)[0]}"})
    for agent in ids:
        tokens.create(org, "u", agent, ["memory:write"])
    if tied:
        tie(engine, AgentRow, org)
    batches = iter(inserts)

    def insert() -> None:
        for _ in range(next(batches, 0)):
            assert admin.post("/v1/admin/agents", json={"name": "meanwhile"}).status_code == 201

    seen = walk(admin, "/v1/admin/agents", limit, insert)
    listed = [a["id"] for a in seen]
    assert len(listed) == len(set(listed)) and set(ids) <= set(listed)
    assert in_key_order(seen)


def session_rows(engine: Engine, table: type[TokenRow] | type[AgentRow], org: str) -> list[Any]:
    with transaction(engine) as session:
        return list(session.scalars(sa.select(table).where(col(table.org_id) == org)))


@pytest.mark.parametrize("path", ["/v1/admin/tokens", "/v1/admin/agents"])
@pytest.mark.parametrize(
    ("params", "field", "rule"),
    [
        ({"cursor": "not-a-cursor"}, "/query/cursor", "format"),
        ({"cursor": base64.urlsafe_b64encode(json.dumps(["2026-01-01T00:00:00+00:00", "\ud800"]).encode()).decode()}, "/query/cursor", "format"),
        ({"cursor": "x" * 1025}, "/query/cursor", "maxLength"),
        ({"limit": 0}, "/query/limit", "minimum"),
        ({"limit": 101}, "/query/limit", "maximum"),
    ],
)
def test_a_bad_cursor_or_limit_is_422_at_that_parameter(
    app: FastAPI, make_token: Any, path: str, params: dict[str, Any], field: str, rule: str
) -> None:
    admin = TestClient(app, headers={"Authorization": f"Bearer {make_token('acme', 'root', ADMIN, None)}"})
    response = admin.get(path, params=params)
    assert response.status_code == 422, response.text
    assert [(e["field"], e["rule"]) for e in response.json()["errors"]] == [(field, rule)]


def test_a_cursor_from_one_list_does_not_open_another_org(app: FastAPI, make_token: Any) -> None:
    """A cursor is a position, not a grant: another org's admin following it sees only its own rows."""
    acme = TestClient(app, headers={"Authorization": f"Bearer {make_token('acme', 'root', ADMIN, None)}"})
    make_token("acme", "ann", ["memory:read"], None)
    cursor = acme.get("/v1/admin/tokens", params={"limit": 1}).json()["next_cursor"]
    globex = TestClient(app, headers={"Authorization": f"Bearer {make_token('globex', 'gus', ADMIN, None)}"})
    page = globex.get("/v1/admin/tokens", params={"cursor": cursor})
    assert page.status_code == 200 and {t["user_id"] for t in page.json()["items"]} <= {"gus"}


def test_over_mcp_an_admin_pages_through_tokens_by_cursor(app: FastAPI, settings: Settings, make_token: Any) -> None:
    root = make_token("acme", "root", ADMIN, None)
    for n in range(3):
        make_token("acme", f"user-{n}", ["memory:read"], None)
    seen: list[str] = []
    arguments: dict[str, Any] = {"name": "listTokens", "query": {"limit": 2}}
    with TestClient(app, base_url=settings.public_url) as mcp:
        while True:
            page = call_tool(mcp, root, "execute_capability", arguments)
            assert not page.get("isError"), page
            seen += [t["id"] for t in page["structuredContent"]["items"]]
            cursor = page["structuredContent"]["next_cursor"]
            if cursor is None:
                break
            arguments = {"name": "listTokens", "query": {"limit": 2, "cursor": cursor}}
    assert len(seen) == len(set(seen)) == 4


def test_the_cli_lists_follow_the_cursors_to_the_last_row(cli: CliRunner, engine: Engine) -> None:
    """More rows than one page of the CLI's reads: every one is printed, once."""
    tokens = TokenStore(engine)
    for n in range(105):
        tokens.create("acme", f"u{n}", f"agent-{n:03}", ["memory:write"])
    agents = cli.invoke(cli_app, ["agent", "list", "--org", "acme"], catch_exceptions=False)
    assert agents.exit_code == 0
    assert sorted(line.split("\t")[0] for line in agents.stdout.splitlines()) == [f"agent-{n:03}" for n in range(105)]
    listed = cli.invoke(cli_app, ["token", "list", "--org", "acme"], catch_exceptions=False)
    assert listed.exit_code == 0 and all(row.id in listed.stdout for row in session_rows(engine, TokenRow, "acme"))
