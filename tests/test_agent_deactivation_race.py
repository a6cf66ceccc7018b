"""A deactivation bites writes already in flight: once it has answered, nothing the agent writes commits.

The agent's status is read again inside every write transaction (``store.agents.writing_as``),
where the deactivation's UPDATE has to wait for it (MariaDB: the read holds the row's share
lock; SQLite: one write transaction at a time). Checked before the write only, writes that had
passed the check committed up to 170 ms after the admin was answered 200.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from memory_bank.errors import DomainError, ErrorCode
from memory_bank.handlers.convert import to_memory
from memory_bank.security.principal import Principal
from memory_bank.store import MemoryStore
from memory_bank.store.agents import AgentStore, register_for_token
from memory_bank.store.database import transaction
from memory_bank.store.tables import FeedbackRow, MemoryRow
from memory_bank.transfer import parse_records
from support.mcp_live import live_server

ORG = "acme"
AGENT = "laptop"
#: The burst: how many writes of each kind are in flight when the deactivation is sent.
KINDS = {"save": 60, "put": 30, "patch": 20, "delete": 20, "feedback": 15, "import": 5}
#: Records per import (one batch: an import is refused or written whole).
IMPORT_RECORDS = 4
#: When the deactivation is sent after the burst, as in the hostile pass that found the race.
DEACTIVATE_AFTER_SECONDS = 0.01
#: What a write may be answered: its success, or the refusal a deactivated agent gets.
SUCCESS = {"save": 201, "put": 201, "patch": 200, "delete": 204, "feedback": 201, "import": 200}


def state(engine: Engine) -> tuple[list[tuple[Any, ...]], list[str]]:
    """Every memory of the org (id, superseded, deleted) and every feedback id: what a write can change."""
    memories = sa.select(MemoryRow.id, MemoryRow.superseded_at.is_(None), MemoryRow.deleted_at.is_(None)).where(
        MemoryRow.org_id == ORG
    )
    with engine.connect() as connection:
        return (
            sorted(tuple(row) for row in connection.execute(memories)),
            sorted(connection.scalars(sa.select(FeedbackRow.id).where(FeedbackRow.org_id == ORG))),
        )


def burst(server_url: str, writer: str, admin: str, targets: list[str], imports: list[str], engine: Engine) -> dict[str, Any]:
    """Fire every write of ``KINDS`` at once as ``writer`` and deactivate the agent while they run:
    the answers, the moment the deactivation was answered and the state then."""
    kinds = [kind for kind, count in KINDS.items() for _ in range(count)]
    random.Random(7).shuffle(kinds)
    patches, deletes = iter(targets[:20]), iter(targets[20:40])
    feedback_on, import_bodies = iter(targets[40:]), iter(imports)
    result: dict[str, Any] = {}

    async def run() -> None:
        limits = httpx.Limits(max_connections=len(kinds) + 1)
        async with httpx.AsyncClient(base_url=server_url, timeout=120, limits=limits) as http:
            auth = {"Authorization": f"Bearer {writer}"}

            async def write(n: int, kind: str) -> tuple[str, Any, httpx.Response]:
                if kind == "save":
                    what: Any = f"saved {n}"
                    response = await http.post("/v1/memory", json={"content": what}, headers=auth)
                elif kind == "put":
                    what = f"burst.key{n}"
                    response = await http.put(f"/v1/memory/keypaths/{what}", json={"content": f"put {n}"}, headers=auth)
                elif kind == "patch":
                    what = next(patches)
                    response = await http.patch(f"/v1/memory/{what}", json={"content": f"patched {n}"}, headers=auth)
                elif kind == "delete":
                    what = next(deletes)
                    response = await http.delete(f"/v1/memory/{what}", headers=auth)
                elif kind == "feedback":
                    what = next(feedback_on)
                    response = await http.post(f"/v1/memory/{what}/feedback", json={"feedback": "helpful"}, headers=auth)
                else:
                    what = next(import_bodies)
                    response = await http.post(
                        "/v1/memory/import", content=what, headers={**auth, "Content-Type": "application/x-ndjson"}
                    )
                return kind, what, response

            async def deactivate() -> None:
                await asyncio.sleep(DEACTIVATE_AFTER_SECONDS)
                response = await http.post(f"/v1/admin/agents/{AGENT}/deactivate", headers={"Authorization": f"Bearer {admin}"})
                result["deactivated_at"] = datetime.now(UTC)
                assert response.status_code == 200, response.text
                result["state"] = state(engine)  # before anything else runs on this loop

            writes = [write(n, kind) for n, kind in enumerate(kinds)]
            *answers, _ = await asyncio.gather(*writes, deactivate())
            result["answers"] = answers

    asyncio.run(run())
    return result


def test_no_write_of_an_agent_commits_after_its_deactivation_answered(database_url: str, tmp_path: Path) -> None:
    with live_server(tmp_path, database_url=database_url) as server:
        engine: Engine = server.app.state.engine
        tokens = server.app.state.tokens
        writer = tokens.create(ORG, "ann", AGENT, ["memory:read", "memory:write"])[0]
        admin = tokens.create(ORG, "root", None, ["memory:admin"])[0]
        source = tokens.create(ORG, "sam", "source", ["memory:read", "memory:write"])[0]
        with httpx.Client(base_url=server.url, timeout=60) as http:
            targets = [
                http.post("/v1/memory", json={"content": f"target {n}"}, headers={"Authorization": f"Bearer {writer}"}).json()["id"]
                for n in range(55)
            ]
            for n in range(KINDS["import"] * IMPORT_RECORDS):
                http.post("/v1/memory", json={"content": f"imported {n}"}, headers={"Authorization": f"Bearer {source}"})
            exported = http.get("/v1/memory/export", headers={"Authorization": f"Bearer {source}"}).text.splitlines()
        imports = ["".join(line + "\n" for line in exported[i : i + IMPORT_RECORDS]) for i in range(0, len(exported), IMPORT_RECORDS)]
        assert len(imports) == KINDS["import"]

        result = burst(server.url, writer, admin, targets, imports, engine)
        final = state(engine)
        deactivated_at: datetime = result["deactivated_at"]

        outcomes: Counter[str] = Counter()
        refused: list[tuple[str, Any]] = []
        for kind, what, response in result["answers"]:
            if response.status_code == 403:
                assert response.json()["code"] == ErrorCode.permission_denied.value, response.text
                assert f"agent {AGENT!r} is deactivated" in response.json()["detail"]
                refused.append((kind, what))
                outcomes["refused"] += 1
            else:
                assert response.status_code == SUCCESS[kind], (kind, response.status_code, response.text)
                outcomes["written"] += 1

        # Nothing committed after the deactivation answered: no later stamp, and the state then is the state now ...
        with engine.connect() as connection:
            rows = list(connection.execute(sa.select(MemoryRow).where(MemoryRow.org_id == ORG, MemoryRow.agent_id == AGENT)))
        late = [
            (row.id, stamp)
            for row in rows
            for stamp in (row.created_at, row.superseded_at, row.deleted_at)
            if stamp is not None and stamp.replace(tzinfo=UTC) > deactivated_at
        ]
        assert late == [], f"{len(late)} changes by {AGENT} after its deactivation answered at {deactivated_at}"
        assert final == result["state"]
        assert outcomes["written"] > 0 and outcomes["refused"] > 0, outcomes

        # ... and what was refused left no trace.
        by_content = {row.content for row in rows}
        heads = {row.id: row for row in rows}
        for kind, what in refused:
            if kind == "save":
                assert what not in by_content
            elif kind == "put":
                assert not any(row.keypath == what for row in rows)
            elif kind == "patch":
                assert heads[what].superseded_at is None
            elif kind == "delete":
                assert heads[what].deleted_at is None
            elif kind == "import":
                contents = {json.loads(line)["content"] for line in what.splitlines()}
                with engine.connect() as connection:
                    copies = connection.scalars(
                        sa.select(MemoryRow.id).where(MemoryRow.user_id == "ann", MemoryRow.content.in_(contents))
                    ).all()
                assert copies == []


@pytest.fixture
def deactivated(engine: Engine, make_principal: Callable[..., Principal]) -> tuple[MemoryStore, Principal, MemoryRow, str]:
    """A store, a caller acting as ``laptop``, a memory of it and an export line of another user's
    memory to import, ``laptop`` deactivated since."""
    store = MemoryStore(engine)
    principal = make_principal(org=ORG, agent=AGENT)
    with transaction(engine, write=True) as session:
        register_for_token(session, ORG, AGENT)  # as minting its token does
    saved, _ = store.create(principal, {"content": "before"})
    other, _ = store.create(make_principal(org=ORG, user="sam"), {"content": "sam's"})
    AgentStore(engine).deactivate(AGENT, ORG)
    return store, principal, saved, to_memory(other).model_dump_json()


@pytest.mark.parametrize("write", ["create", "put", "patch", "delete", "feedback", "import"])
def test_every_write_transaction_refuses_a_deactivated_agent(engine: Engine, deactivated, write: str) -> None:
    """The store itself refuses, for a caller that passed ``resolve_agent`` before the deactivation."""
    store, principal, saved, line = deactivated
    calls = {
        "create": lambda: store.create(principal, {"content": "after"}),
        "put": lambda: store.put_keypath(principal, "a.b", {"content": "after"}),
        "patch": lambda: store.patch(principal, saved.id, {"content": "after"}),
        "delete": lambda: store.delete(principal, saved.id),
        "feedback": lambda: store.add_feedback(principal, saved.id, {"feedback": "helpful"}),
        "import": lambda: store.import_records(principal, parse_records(line)),
    }
    with pytest.raises(DomainError) as caught:
        calls[write]()
    assert caught.value.code is ErrorCode.permission_denied
    assert caught.value.detail == f"agent {AGENT!r} is deactivated"
    with engine.connect() as connection:
        kept = sa.select(MemoryRow.content, MemoryRow.superseded_at, MemoryRow.deleted_at).where(MemoryRow.user_id == "ann")
        anns = connection.execute(kept)
        assert [tuple(row) for row in anns] == [("before", None, None)]
        assert connection.scalar(sa.select(sa.func.count()).select_from(FeedbackRow)) == 0


def test_a_write_naming_an_agent_in_the_body_is_refused_in_its_transaction(
    engine: Engine, make_principal: Callable[..., Principal]
) -> None:
    """An agent-less token acting as a named agent: the named agent is the one read again."""
    agents = AgentStore(engine)
    named = agents.create(ORG, "named")
    store = MemoryStore(engine)
    principal = make_principal(org=ORG, agent=None)
    store.create(principal, {"content": "while active", "agent_id": named.id})
    agents.deactivate(named.id, ORG)
    with pytest.raises(DomainError) as caught:
        store.create(principal, {"content": "after", "agent_id": named.id})
    assert caught.value.code is ErrorCode.permission_denied
    assert store.create(principal, {"content": "as no agent"})[1]  # the operator (CLI) writes as no agent: unchecked
