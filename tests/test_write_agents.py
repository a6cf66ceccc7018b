"""Every write needs an active agent of the caller's org (DESIGN §6), on every write operation.

An agent-less token that names no agent, and the token of an agent deactivated since
it was minted, are refused with ``permission_denied`` before anything is written;
the same caller with an active agent may do each of these writes. The operations are
taken from the catalog, so a write operation added later without the check fails here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from memory_bank.generated.spec import SPEC
from memory_bank.store.agents import AgentStore
from memory_bank.store.tables import FeedbackRow, MemoryRow

#: From the spec, not the catalog: operations that are not MCP tools (import) are writes too.
WRITE_OPERATIONS = {
    operation["operationId"]
    for item in SPEC["paths"].values()
    for operation in item.values()
    if isinstance(operation, dict) and operation.get("x-capability", {}).get("permission") == "memory:write"
}
#: The spec's own import example: one record, as an export writes it.
IMPORT_EXAMPLE = SPEC["paths"]["/v1/memory/import"]["post"]["requestBody"]["content"]["application/x-ndjson"]["example"]

Request = Callable[[TestClient, str], Any]

#: One request per write operation, against the memory ``memory_id`` the caller owns.
WRITES: dict[str, Request] = {
    "postMemory": lambda c, m: c.post("/v1/memory", json={"content": "a new fact"}),
    "putMemoryKeypath": lambda c, m: c.put("/v1/memory/keypaths/user.editor", json={"content": "helix"}),
    "patchMemory": lambda c, m: c.patch(f"/v1/memory/{m}", json={"content": "changed"}),
    "deleteMemory": lambda c, m: c.delete(f"/v1/memory/{m}"),
    "postMemoryFeedback": lambda c, m: c.post(f"/v1/memory/{m}/feedback", json={"feedback": "helpful"}),
    "importMemories": lambda c, m: c.post(
        "/v1/memory/import", content=IMPORT_EXAMPLE, headers={"Content-Type": "application/x-ndjson"}
    ),
}


def test_every_write_operation_is_covered() -> None:
    assert set(WRITES) == WRITE_OPERATIONS


def snapshot(engine: sa.Engine) -> tuple[list[tuple[Any, ...]], int]:
    with engine.connect() as connection:
        memories = connection.execute(
            sa.select(MemoryRow.id, MemoryRow.content, MemoryRow.superseded_at, MemoryRow.deleted_at).order_by(MemoryRow.pk)
        ).all()
        feedback = connection.scalar(sa.select(sa.func.count()).select_from(FeedbackRow))
    return [tuple(row) for row in memories], int(feedback or 0)


@pytest.mark.parametrize("operation", sorted(WRITES))
@pytest.mark.parametrize("caller", ["agentless", "deactivated"])
def test_a_write_without_an_active_agent_is_denied_and_writes_nothing(
    app, make_client: Callable[..., TestClient], operation: str, caller: str
) -> None:
    owner = make_client("acme", "ann", agent="laptop")
    saved = owner.post("/v1/memory", json={"content": "the user prefers vim"}).json()
    if caller == "agentless":
        client = make_client("acme", "ann", agent=None)
    else:
        client = make_client("acme", "ann", agent="retired")
        assert len(AgentStore(app.state.engine).deactivate("retired", "acme")) == 1
    before = snapshot(app.state.engine)

    response = WRITES[operation](client, saved["id"])

    assert response.status_code == 403, response.text
    assert response.json()["code"] == "permission_denied"
    assert snapshot(app.state.engine) == before


@pytest.mark.parametrize("operation", sorted(WRITES))
def test_the_same_write_with_an_active_agent_succeeds(make_client: Callable[..., TestClient], operation: str) -> None:
    owner = make_client("acme", "ann", agent="laptop")
    saved = owner.post("/v1/memory", json={"content": "the user prefers vim"}).json()
    assert WRITES[operation](owner, saved["id"]).status_code in (200, 201, 204)
