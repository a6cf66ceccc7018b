"""Who is charged and who may ask what it can call: the order inside ``authorize``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from memory_bank.app import create_app
from memory_bank.generated.catalog import CAPABILITIES
from memory_bank.settings import Settings
from support.clock import pinned
from support.mcp_live import live_server

WRITE_ONLY = ("memory:write",)
WRITE_CAPABILITIES = {c["name"] for c in CAPABILITIES if c["policy"]["expose"] and c["policy"]["permission"] == "memory:write"}



@pytest.fixture
def tight_client(settings: Settings) -> Iterator[TestClient]:
    app = create_app(settings.model_copy(update={"rate_limit_rpm": 3}), clock=pinned)
    with TestClient(app) as client:
        yield client
    app.state.engine.dispose()


def bearer(client: TestClient, org: str, perms: tuple[str, ...]) -> dict[str, str]:
    token = client.app.state.tokens.create(org, "ann", "agent-1", perms)[0]  # type: ignore[attr-defined]
    return {"Authorization": f"Bearer {token}"}


def test_refused_calls_do_not_spend_the_orgs_budget(tight_client: TestClient) -> None:
    reader, writer = bearer(tight_client, "acme", ("memory:read",)), bearer(tight_client, "acme", WRITE_ONLY)
    refused = [tight_client.post("/v1/memory", json={"content": "x"}, headers=reader).status_code for _ in range(10)]
    assert refused == [403] * 10
    admitted = [tight_client.post("/v1/memory", json={"content": f"fact {i}"}, headers=writer).status_code for i in range(4)]
    # Exactly the budget of 3 is admitted: the reader's ten 403s cost nothing, each write costs one.
    assert admitted == [201, 201, 201, 429]


def test_a_write_only_token_lists_what_it_may_call_over_rest(client: TestClient) -> None:
    found = client.get("/v1/capabilities", headers=bearer(client, "acme", WRITE_ONLY))
    assert found.status_code == 200, found.text
    listing = found.json()
    assert {card["name"] for card in listing["results"]} == WRITE_CAPABILITIES
    assert listing["total"] == len(WRITE_CAPABILITIES)


async def test_a_write_only_token_lists_what_it_may_call_over_mcp(tmp_path: Path) -> None:
    with live_server(tmp_path) as server:
        async with server.client(server.token(perms=WRITE_ONLY)) as mcp:
            result = await mcp.call_tool("search_capabilities", {"query": ""})
    assert not result.is_error, result.structured_content
    listing = result.structured_content
    assert listing is not None
    assert {card["name"] for card in listing["results"]} == WRITE_CAPABILITIES
    assert listing["total"] == len(WRITE_CAPABILITIES)
