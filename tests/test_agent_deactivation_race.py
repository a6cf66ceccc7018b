"""A deactivation, a revocation or a rotation bites writes already in flight: once it has
answered, nothing the agent writes, or the token, commits.

The agent's status and the token's are read again inside every write transaction
(``store.fence.writing_as``), where the deactivation's, revocation's or rotation's UPDATE has to
wait for it (MariaDB: the read holds the row's share lock; SQLite: one write transaction at a
time). Checked before the write only, writes that had passed the check committed up to 170 ms
after a deactivation was answered 200, up to 1.2 s after a rotation was.
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
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from memory_bank.errors import DomainError, ErrorCode
from memory_bank.handlers.convert import to_memory
from memory_bank.security.principal import Principal
from memory_bank.security.tokens import NOT_VALID
from memory_bank.store import MemoryStore
from memory_bank.store.agents import AgentStore
from memory_bank.store.columns import utcnow
from memory_bank.store.database import transaction
from memory_bank.store.tables import AgentRow, FeedbackRow, MemoryRow, TokenRow
from memory_bank.store.tokens import TokenStore
from memory_bank.transfer import parse_records
from support.mcp_live import live_server

ORG = "acme"
AGENT = "laptop"
#: The burst: how many writes of each kind are in flight when the deactivation is sent.
KINDS = {"save": 60, "put": 30, "patch": 20, "delete": 20, "feedback": 15, "import": 5}
#: Records per import (one batch: an import is refused or written whole).
IMPORT_RECORDS = 4
#: When the deactivation (revocation, rotation) is sent after the burst, as in the hostile pass that found the race.
STOP_AFTER_SECONDS = 0.01
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


#: What stops the writer while its writes run: sent by an admin, answered with this status.
Stop = tuple[str, str, int]


def burst(server_url: str, writer: str, admin: str, stop: Stop, targets: list[str], imports: list[str], engine: Engine) -> dict[str, Any]:
    """Fire every write of ``KINDS`` at once as ``writer`` and send ``stop`` (method, path, status) while
    they run: the answers, the moment ``stop`` was answered and the state then."""
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

            async def stopping() -> None:
                await asyncio.sleep(STOP_AFTER_SECONDS)
                method, path, status = stop
                response = await http.request(method, path, headers={"Authorization": f"Bearer {admin}"})
                result["stopped_at"] = datetime.now(UTC)
                assert response.status_code == status, response.text
                result["state"] = state(engine)  # before anything else runs on this loop

            writes = [write(n, kind) for n, kind in enumerate(kinds)]
            *answers, _ = await asyncio.gather(*writes, stopping())
            result["answers"] = answers

    asyncio.run(run())
    return result


def refused_as_deactivated(response: httpx.Response) -> bool:
    if response.status_code != 403:
        return False
    assert response.json()["code"] == ErrorCode.permission_denied.value, response.text
    assert f"agent {AGENT!r} is deactivated" in response.json()["detail"]
    return True


def refused_as_invalid(response: httpx.Response) -> bool:
    """The 401 the write would have got had it started after the revocation or rotation."""
    if response.status_code != 401:
        return False
    assert response.json()["code"] == ErrorCode.unauthorized.value, response.text
    assert response.json()["detail"] == NOT_VALID
    assert 'error="invalid_token"' in response.headers["www-authenticate"]
    return True


def test_no_write_of_an_agent_commits_after_its_deactivation_answered(database_url: str, tmp_path: Path) -> None:
    no_write_after(database_url, tmp_path, lambda tokens, writer: ("POST", f"/v1/admin/agents/{AGENT}/deactivate", 200), refused_as_deactivated)


@pytest.mark.parametrize("stop", ["revoke", "rotate"])
def test_no_write_with_a_token_commits_after_its_revocation_or_rotation_answered(
    database_url: str, tmp_path: Path, stop: str
) -> None:
    """The token is read again inside every write transaction too: a revocation's or rotation's
    answer is final for the writes that authenticated before it. (Checked at authentication only,
    up to 76 saves committed 0.4 s after a revocation's answer, 152 up to 1.2 s after a rotation's.)"""

    def stopping(tokens: TokenStore, writer: str) -> Stop:
        principal = tokens.verify(writer)
        assert principal is not None
        if stop == "revoke":
            return "DELETE", f"/v1/admin/tokens/{principal.token_id}", 204
        return "POST", f"/v1/admin/tokens/{principal.token_id}/rotate", 200

    no_write_after(database_url, tmp_path, stopping, refused_as_invalid)


def no_write_after(
    database_url: str,
    tmp_path: Path,
    stop: Callable[[TokenStore, str], Stop],
    refused_as: Callable[[httpx.Response], bool],
) -> None:
    """Send ``stop`` (given the token store and the writer's secret) amid a burst of the writer's
    writes: nothing the writer writes commits after it is answered, and what is refused
    (``refused_as`` tells it) left no trace."""
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

        result = burst(server.url, writer, admin, stop(tokens, writer), targets, imports, engine)
        final = state(engine)
        stopped_at: datetime = result["stopped_at"]

        outcomes: Counter[str] = Counter()
        refused: list[tuple[str, Any]] = []
        for kind, what, response in result["answers"]:
            if refused_as(response):
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
            if stamp is not None and stamp.replace(tzinfo=UTC) > stopped_at
        ]
        assert late == [], f"{len(late)} changes by the writer after it was stopped, answered at {stopped_at}"
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


#: How a caller that was let in is stopped before its write runs, and what the write is then refused with.
STOPPED = {
    "deactivated": (ErrorCode.permission_denied, f"agent {AGENT!r} is deactivated"),
    "revoked": (ErrorCode.unauthorized, NOT_VALID),
    "rotated": (ErrorCode.unauthorized, NOT_VALID),
    "expired": (ErrorCode.unauthorized, "the bearer token expired at "),
}


@pytest.fixture(params=sorted(STOPPED))
def stopped(request: pytest.FixtureRequest, engine: Engine) -> tuple[MemoryStore, Principal, MemoryRow, str, str]:
    """A store, a caller acting as ``laptop`` (verified from its token, as a request is), a memory of
    it and an export line of another user's memory to import; the caller stopped since, as named."""
    store, tokens = MemoryStore(engine), TokenStore(engine)
    secret, row = tokens.create(ORG, "ann", AGENT, ["memory:read", "memory:write"])  # registers ``laptop``
    principal = tokens.verify(secret)
    assert principal is not None
    saved, _ = store.create(principal, {"content": "before"})
    other, _ = store.create(Principal("t", ORG, "sam", None, frozenset({"memory:write"})), {"content": "sam's"})
    how: str = request.param
    if how == "deactivated":
        AgentStore(engine).deactivate(AGENT, ORG)
    elif how == "revoked":
        assert tokens.revoke(row.id)
    elif how == "rotated":
        assert tokens.rotate(row.id) is not None
    else:
        with transaction(engine, write=True) as session:
            session.execute(sa.update(TokenRow).where(TokenRow.id == row.id).values(expires_at=utcnow()))
    return store, principal, saved, to_memory(other).model_dump_json(), how


@pytest.mark.parametrize("write", ["create", "put", "patch", "delete", "feedback", "import"])
def test_every_write_transaction_refuses_a_stopped_caller(engine: Engine, stopped, write: str) -> None:
    """The store itself refuses, for a caller that was let in (token verified, ``resolve_agent``
    passed) before its agent was deactivated or its token revoked, rotated away or expired."""
    store, principal, saved, line, how = stopped
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
    code, detail = STOPPED[how]
    assert caught.value.code is code
    assert caught.value.detail.startswith(detail)
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


def revoked_once_verified(tokens: TokenStore, monkeypatch: pytest.MonkeyPatch, secret: str, stop: str) -> None:
    """The hook between a request's token check and its write: ``secret``'s token is revoked
    (``stop`` "revoke") or rotated right after the check let its request in."""
    verify = tokens.verify

    def verified_then_stopped(plaintext: str) -> Principal | None:
        principal = verify(plaintext)
        if plaintext == secret and principal is not None:
            assert tokens.revoke(principal.token_id) if stop == "revoke" else tokens.rotate(principal.token_id)
        return principal

    monkeypatch.setattr(tokens, "verify", verified_then_stopped)


@pytest.mark.parametrize("stop", ["revoke", "rotate"])
def test_a_save_let_in_before_its_token_was_revoked_is_refused(
    app: FastAPI, client: TestClient, engine: Engine, monkeypatch: pytest.MonkeyPatch, stop: str
) -> None:
    """Deterministic: the token dies between the check and the write; the write is the 401 it
    would have been a moment later, challenge included, and stores nothing."""
    tokens: TokenStore = app.state.tokens
    secret = tokens.create(ORG, "ann", AGENT, ["memory:read", "memory:write"])[0]
    revoked_once_verified(tokens, monkeypatch, secret, stop)
    response = client.post("/v1/memory", json={"content": "after"}, headers={"Authorization": f"Bearer {secret}"})
    assert refused_as_invalid(response), response.text
    assert state(engine) == ([], [])


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/v1/admin/tokens", {"name": "spare", "user_id": "mallory", "permissions": ["memory:admin"]}),
        ("POST", "/v1/admin/tokens/{other}/rotate", None),
        ("DELETE", "/v1/admin/tokens/{other}", None),
        ("POST", "/v1/admin/agents", {"name": "mallory"}),
        ("POST", f"/v1/admin/agents/{AGENT}/deactivate", None),
    ],
)
def test_an_admin_write_let_in_before_its_token_was_revoked_is_refused(
    app: FastAPI, client: TestClient, engine: Engine, monkeypatch: pytest.MonkeyPatch, method: str, path: str, body: Any
) -> None:
    """The worst case of a leaked admin token: revoked while its request mints a token (or
    rotates one, whose new secret it would be answered). Admin writes are fenced too."""
    tokens: TokenStore = app.state.tokens
    other = tokens.create(ORG, "ann", AGENT, ["memory:read"])[1]
    admin = tokens.create(ORG, "root", None, ["memory:admin"])[0]
    with engine.connect() as connection:
        before = [tuple(row) for row in connection.execute(sa.select(TokenRow.id, TokenRow.token_hash, TokenRow.revoked_at))]
        agents = [tuple(row) for row in connection.execute(sa.select(AgentRow.id, AgentRow.active))]
    revoked_once_verified(tokens, monkeypatch, admin, "revoke")
    response = client.request(method, path.format(other=other.id), json=body, headers={"Authorization": f"Bearer {admin}"})
    assert refused_as_invalid(response), response.text
    with engine.connect() as connection:
        after = {row.id: tuple(row) for row in connection.execute(sa.select(TokenRow.id, TokenRow.token_hash, TokenRow.revoked_at))}
        assert [tuple(row) for row in connection.execute(sa.select(AgentRow.id, AgentRow.active))] == agents
    assert [after[token[0]] for token in before if token[0] == other.id] == [before[0]]  # untouched
    assert len(after) == len(before)  # nothing minted
