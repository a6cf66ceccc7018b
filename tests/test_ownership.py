"""Who may change what: org scope shares reading, never writing (REST and MCP, both backends).

The matrix: the owner, another member of the owner's org and a user of another org,
each trying every write on a memory id (PATCH, DELETE, feedback) and a PUT to the same
keypath, on a user-scoped and an org-scoped memory. Only the owner changes or deletes;
to anyone else the memory is 404, exactly as if it did not exist, and it is left as it
was. Feedback needs only read access and is recorded under the giver.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from memory_bank.store.tables import FeedbackRow, MemoryRow
from support.mcp_live import LiveServer, live_server, tool_problem

ORIGINAL = "the staging password rotates on fridays"
INTRUDER = "intruder text written over the owner's"
ACTORS = ("owner", "member", "outsider")
WRITES = ("patch", "delete", "feedback", "put")
SCOPES = ("user", "org")


@dataclass(frozen=True)
class Outcome:
    """What one attempted write returned: success or the problem code."""

    ok: bool
    code: str | None = None


def expected(actor: str, write: str, scope: str) -> Outcome:
    if actor == "owner" or write == "put":  # a PUT writes the caller's own keypath, never the owner's
        return Outcome(True)
    if write == "feedback" and actor == "member" and scope == "org":
        return Outcome(True)
    return Outcome(False, "not_found")


def rows_at(engine: Engine, keypath: str) -> list[MemoryRow]:
    statement = sa.select(*MemoryRow.__table__.columns).where(MemoryRow.keypath == keypath)
    with engine.connect() as connection:
        return [MemoryRow(**row._mapping) for row in connection.execute(statement)]


def feedback_givers(engine: Engine, memory_id: str) -> list[str]:
    with engine.connect() as connection:
        return list(connection.scalars(sa.select(FeedbackRow.user_id).where(FeedbackRow.memory_id == memory_id)))


def check_untouched_unless_owner(engine: Engine, actor: str, write: str, keypath: str, memory_id: str) -> None:
    """The owner's chain after the attempt: changed only by the owner; intruders' PUTs live apart, as theirs."""
    rows = rows_at(engine, keypath)
    chain = sorted((r for r in rows if r.chain_id == memory_id), key=lambda r: r.version)
    assert {r.user_id for r in chain} == {"ann"}  # a successor never takes another user's text as the owner's
    others = [r for r in rows if r.chain_id != memory_id]
    if actor == "owner":
        if write == "patch":
            assert [r.content for r in chain] == [ORIGINAL, INTRUDER]
        elif write == "delete":
            assert chain[-1].deleted_at is not None
        return
    assert [(r.content, r.superseded_at, r.deleted_at) for r in chain] == [(ORIGINAL, None, None)]
    if write == "put":
        assert [(r.user_id, r.content, r.keypath) for r in others] == [(actor_user(actor), INTRUDER, keypath)]
    else:
        assert others == []
    if write == "feedback" and expected(actor, write, chain[0].scope).ok:
        assert feedback_givers(engine, memory_id) == [actor_user(actor)]
    elif write == "feedback":
        assert feedback_givers(engine, memory_id) == []


def actor_user(actor: str) -> str:
    return {"owner": "ann", "member": "bob", "outsider": "eve"}[actor]


def actor_org(actor: str) -> str:
    return "other" if actor == "outsider" else "acme"


# -- REST -------------------------------------------------------------------------


def rest_attempt(client: TestClient, write: str, keypath: str, memory_id: str) -> Outcome:
    if write == "patch":
        response = client.patch(f"/v1/memory/{memory_id}", json={"content": INTRUDER})
    elif write == "delete":
        response = client.delete(f"/v1/memory/{memory_id}")
    elif write == "feedback":
        response = client.post(f"/v1/memory/{memory_id}/feedback", json={"feedback": "incorrect"})
    else:
        response = client.put(f"/v1/memory/keypaths/{keypath}", json={"content": INTRUDER})
    if response.status_code < 400:
        return Outcome(True)
    return Outcome(False, response.json()["code"])


@pytest.mark.parametrize("scope", SCOPES)
def test_rest_only_the_owner_changes_or_deletes(app, make_client: Callable[..., TestClient], database_url: str, scope: str) -> None:
    engine: Engine = app.state.engine
    clients = {actor: make_client(actor_org(actor), actor_user(actor)) for actor in ACTORS}
    for actor in ACTORS:
        for write in WRITES:
            keypath = f"ops.{actor}.{write}"  # each matrix cell on its own keypath
            saved = clients["owner"].put(f"/v1/memory/keypaths/{keypath}", json={"content": ORIGINAL, "scope": scope})
            assert saved.status_code == 201, saved.text
            memory_id = saved.json()["id"]
            outcome = rest_attempt(clients[actor], write, keypath, memory_id)
            assert outcome == expected(actor, write, scope), (actor, write, scope)
            check_untouched_unless_owner(engine, actor, write, keypath, memory_id)


# -- MCP --------------------------------------------------------------------------


@pytest.fixture
def server(database_url: str, tmp_path) -> Iterator[LiveServer]:
    with live_server(tmp_path, database_url=database_url) as live:
        yield live


async def mcp_attempt(client: Any, write: str, keypath: str, memory_id: str) -> Outcome:
    path = {"memory_id": memory_id}
    calls: dict[str, dict[str, Any]] = {
        "patch": {"name": "patchMemory", "path": path, "body": {"content": INTRUDER}},
        "delete": {"name": "deleteMemory", "path": path},
        "feedback": {"name": "postMemoryFeedback", "path": path, "body": {"feedback": "incorrect"}},
        "put": {"name": "putMemoryKeypath", "path": {"keypath": keypath}, "body": {"content": INTRUDER}},
    }
    result = await client.call_tool("execute_capability", calls[write])
    if not result.is_error:
        return Outcome(True)
    return Outcome(False, tool_problem(result)["code"])


@pytest.mark.parametrize("scope", SCOPES)
async def test_mcp_only_the_owner_changes_or_deletes(server: LiveServer, scope: str) -> None:
    engine: Engine = server.app.state.engine
    tokens = {actor: server.token(actor_org(actor), actor_user(actor)) for actor in ACTORS}
    for actor in ACTORS:
        for write in WRITES:
            keypath = f"ops.{actor}.{write}"
            async with server.client(tokens["owner"]) as owner:
                saved = await owner.call_tool(
                    "execute_capability",
                    {"name": "putMemoryKeypath", "path": {"keypath": keypath}, "body": {"content": ORIGINAL, "scope": scope}},
                )
            assert not saved.is_error, saved.structured_content
            memory_id = saved.structured_content["id"]
            async with server.client(tokens[actor]) as client:
                outcome = await mcp_attempt(client, write, keypath, memory_id)
            assert outcome == expected(actor, write, scope), (actor, write, scope)
            check_untouched_unless_owner(engine, actor, write, keypath, memory_id)
