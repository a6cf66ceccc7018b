"""What the admin API refuses in a request, and with which answer: REST through the app, on both backends.

An id that is too long, a duplicated permission, an id that looks like another: each is
a 422 ``invalid_params`` naming the field, never a silent fix-up and never a 413 (which
is kept for a body with more bytes than its schema admits).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import quote

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from memory_bank.store.columns import utcnow
from memory_bank.store.database import transaction
from memory_bank.store.tables import AgentRow
from memory_bank.store.tokens import TokenStore

ADMIN = ["memory:admin"]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def admin(app: FastAPI, client: TestClient, make_token: Any) -> TestClient:
    return TestClient(app, headers=bearer(make_token("acme", "root", ADMIN, None)))


def fields(response: Any) -> list[tuple[str, str]]:
    return [(e["field"], e["rule"]) for e in response.json()["errors"]]


@pytest.mark.parametrize("field", ["user_id", "agent_id"])
def test_an_id_one_character_over_its_bound_is_422_naming_it(admin: TestClient, field: str) -> None:
    response = admin.post("/v1/admin/tokens", json={"name": "x", "permissions": ["memory:read"], field: "u" * 129})
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "invalid_params"
    assert fields(response) == [(f"/body/{field}", "maxLength")]
    at_bound = admin.post("/v1/admin/tokens", json={"name": "x", "permissions": ["memory:read"], field: "u" * 128})
    assert at_bound.status_code == 201, at_bound.text


def test_only_a_body_over_its_byte_cap_is_413(admin: TestClient) -> None:
    padded = b'{"name": "x", "permissions": ["memory:read"]}' + b" " * 10_000
    response = admin.post("/v1/admin/tokens", content=padded, headers={"Content-Type": "application/json"})
    assert response.status_code == 413 and response.json()["code"] == "payload_too_large"


@pytest.mark.parametrize(
    ("permissions", "message"),
    [(["memory:read", "memory:read"], "item 1 repeats item 0"), (["memory:write", "memory:read", "memory:write"], "item 2 repeats item 0")],
)
def test_a_repeated_permission_is_422_not_dropped(admin: TestClient, permissions: list[str], message: str) -> None:
    response = admin.post("/v1/admin/tokens", json={"name": "x", "permissions": permissions})
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "invalid_params"
    assert [(e["field"], e["rule"], e["message"]) for e in response.json()["errors"]] == [("/body/permissions", "uniqueItems", message)]
    assert admin.get("/v1/admin/tokens").status_code == 200


#: Ids that would list exactly like ``ci`` (or like each other), one per kind of trick.
LOOKALIKES = [
    "c\u200bi",  # zero-width space (Cf)
    "\u202eic",  # right-to-left override (Cf)
    "ci\ufeff",  # byte order mark (Cf)
    "ci\U000e0001",  # language tag, beyond the BMP: only the handler sees it
    "c\u3164i",  # Hangul filler: a letter that shows as nothing
    "c\u00a0i",  # no-break space
    "ｃｉ",  # fullwidth: not NFKC
    "cafe\u0301",  # e + combining acute beside the precomposed é: not NFKC
]


@pytest.mark.parametrize("value", LOOKALIKES)
@pytest.mark.parametrize("field", ["user_id", "agent_id"])
def test_an_id_with_an_invisible_or_lookalike_character_is_422_naming_the_field(
    admin: TestClient, field: str, value: str
) -> None:
    response = admin.post("/v1/admin/tokens", json={"name": "x", "permissions": ["memory:read"], field: value})
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "invalid_params"
    assert fields(response) == [(f"/body/{field}", "pattern")]
    message = response.json()["errors"][0]["message"]
    assert "pattern" not in message and ("invisible" in message or "NFKC" in message)  # said in words, not the regex
    assert admin.get("/v1/admin/agents").json()["items"] == []  # nothing was registered


@pytest.mark.parametrize("value", ["c\u200bi", "ci\U000e0001"])
@pytest.mark.parametrize("action", ["deactivate", "reactivate"])
def test_an_agent_path_id_with_an_invisible_character_is_422(admin: TestClient, value: str, action: str) -> None:
    response = admin.post(f"/v1/admin/agents/{quote(value)}/{action}")
    assert response.status_code == 422, response.text
    assert fields(response) == [("/path/agent_id", "pattern")]


#: Agent ids a URL cannot carry: clients and servers drop a ``.`` or ``..`` path segment.
DOT_SEGMENTS = [".", "..", "a/../b", "a/./b", "./a", "a/.."]


@pytest.mark.parametrize("value", DOT_SEGMENTS)
def test_a_new_agent_id_with_a_dot_segment_is_422_saying_why(admin: TestClient, value: str) -> None:
    """Registered, ``..`` answered 404 at ``/v1/admin/agents/../deactivate`` (sent as
    ``/v1/admin/deactivate``): no admin could stop the agent over HTTP (a hostile pass)."""
    response = admin.post("/v1/admin/tokens", json={"name": "x", "permissions": ["memory:write"], "agent_id": value})
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "invalid_params"
    assert fields(response) == [("/body/agent_id", "pattern")]
    assert "URLs remove" in response.json()["errors"][0]["message"]
    assert admin.get("/v1/admin/agents").json()["items"] == []  # nothing was registered


@pytest.mark.parametrize("value", ["...", "a.b", "a/..b", "..a/b", "a/.../b"])
def test_dots_that_are_not_a_whole_segment_are_still_ids(admin: TestClient, value: str) -> None:
    response = admin.post("/v1/admin/tokens", json={"name": "x", "permissions": ["memory:write"], "agent_id": value})
    assert response.status_code == 201, response.text


def test_an_agent_stored_with_a_dot_segment_id_keeps_working(app: FastAPI, admin: TestClient, engine: Engine) -> None:
    """An agent registered before the rule is listed, gets tokens, writes, and is stopped by its
    percent-encoded path, which no client or server takes for a dot segment."""
    with transaction(engine, write=True) as session:
        session.add(AgentRow(org_id="acme", id="..", name="old"))
    assert [a["id"] for a in admin.get("/v1/admin/agents").json()["items"]] == [".."]
    minted = admin.post("/v1/admin/tokens", json={"name": "x", "permissions": ["memory:write"], "agent_id": ".."})
    assert minted.status_code == 201, minted.text
    writer = TestClient(app, headers=bearer(minted.json()["secret"]))
    assert writer.post("/v1/memory", json={"content": "still here"}).json()["agent_id"] == ".."
    off = admin.post("/v1/admin/agents/%2E%2E/deactivate")
    assert off.status_code == 200 and off.json()["active"] is False, off.text
    assert writer.post("/v1/memory", json={"content": "stopped"}).status_code == 403


def test_ids_in_other_scripts_and_inner_spaces_are_still_ids(admin: TestClient) -> None:
    for value in ["日本語", "café", "ci runner", "Ωmega-7"]:
        response = admin.post("/v1/admin/tokens", json={"name": "x", "permissions": ["memory:read"], "user_id": value})
        assert response.status_code == 201, response.text
        assert response.json()["token"]["user_id"] == value


@pytest.mark.parametrize("name", ["evil\u202etxt.exe", "a\u2066b", "ci\u200fbot", "a\u200eb", "x\u061cy"])
def test_a_name_with_a_bidirectional_override_is_422(admin: TestClient, name: str) -> None:
    response = admin.post("/v1/admin/agents", json={"name": name})
    assert response.status_code == 422 and fields(response) == [("/body/name", "pattern")]


def test_rotating_an_expired_token_is_409_and_leaves_its_secret_as_it_was(admin: TestClient, engine: Engine) -> None:
    tokens = TokenStore(engine)
    old, row = tokens.create("acme", "ci", None, ["memory:read"], expires_at=utcnow() - timedelta(seconds=1))
    response = admin.post(f"/v1/admin/tokens/{row.id}/rotate")
    assert response.status_code == 409, response.text
    assert response.json()["code"] == "conflict" and "create a new token" in response.json()["detail"]
    assert tokens.find(row.id).token_hash == row.token_hash  # type: ignore[union-attr]

    _, soon = tokens.create("acme", "ci", None, ["memory:read"], expires_at=utcnow() + timedelta(hours=1))
    assert admin.post(f"/v1/admin/tokens/{soon.id}/rotate").status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        b'{"name": "x", "permissions": ["memory:read"], "user_id": "ci", "user_id": "root"}',
        b'{"name": "x", "name": "x", "permissions": ["memory:read"]}',
    ],
)
def test_a_key_given_twice_is_422_rather_than_read_as_the_last(admin: TestClient, body: bytes) -> None:
    """A proxy or a log may read the first ``user_id``, the model the last: such a body means two things."""
    response = admin.post("/v1/admin/tokens", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 422, response.text
    assert fields(response) == [("/body", "uniqueKeys")]
    assert len(admin.get("/v1/admin/tokens").json()["items"]) == 1  # only the admin's own


def test_many_repeats_of_one_key_are_refused_quickly(admin: TestClient) -> None:
    body = b'{"permissions": ["memory:read"], ' + b'"name": "x", ' * 20_000 + b'"name": "x"}'
    response = admin.post("/v1/admin/tokens", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code in (413, 422)


@pytest.mark.parametrize(
    "name",
    ["   ", " padded", "padded ", "\u200b", "\ufeff\u200b", "\u3164", "\u2800", "\U000e0020", "\u200f\u200e", "line\u2028break", "para\u2029graph"],
)
def test_a_blank_invisible_padded_or_line_breaking_name_is_422(admin: TestClient, name: str) -> None:
    """An operator's list shows such a name as nothing, or breaks its row (a hostile pass)."""
    response = admin.post("/v1/admin/tokens", json={"name": name, "permissions": ["memory:read"]})
    assert response.status_code == 422 and fields(response) == [("/body/name", "pattern")]
    assert "visible character" in response.json()["errors"][0]["message"]


@pytest.mark.parametrize("name", ["laptop", "love \u2764\ufe0f", "a\u200bb", "東京の端末", "x"])
def test_a_name_that_starts_visible_is_taken_whatever_follows(admin: TestClient, name: str) -> None:
    assert admin.post("/v1/admin/agents", json={"name": name}).status_code == 201


def test_a_token_for_a_deactivated_agent_is_403_at_agent_id(admin: TestClient, engine: Engine) -> None:
    """403 ``permission_denied``, the design's answer for an inactive agent and what its writes get:
    the request fits the schema, so it is not ``invalid_params``."""
    TokenStore(engine).create("acme", "ann", "laptop", ["memory:write"])
    assert admin.post("/v1/admin/agents/laptop/deactivate").status_code == 200
    response = admin.post("/v1/admin/tokens", json={"name": "x", "permissions": ["memory:write"], "agent_id": "laptop"})
    assert response.status_code == 403 and response.json()["code"] == "permission_denied", response.text
    assert fields(response) == [("/body/agent_id", "value")] and "deactivated" in response.json()["detail"]


def test_an_admin_token_of_a_deactivated_agent_cannot_change_tokens_or_agents(
    app: FastAPI, admin: TestClient, engine: Engine
) -> None:
    """Else it could reactivate its own agent, or mint a token for a fresh one and write on."""
    tokens = TokenStore(engine)
    secret, bound = tokens.create("acme", "bot", "rogue", ADMIN)
    rogue = TestClient(app, headers=bearer(secret))
    assert rogue.post("/v1/admin/agents", json={"name": "ok while active"}).status_code == 201
    assert admin.post("/v1/admin/agents/rogue/deactivate").status_code == 200

    attempts = [
        rogue.post("/v1/admin/agents/rogue/reactivate"),
        rogue.post("/v1/admin/tokens", json={"name": "escape", "permissions": ["memory:write"], "agent_id": "fresh"}),
        rogue.post(f"/v1/admin/tokens/{bound.id}/rotate"),
        rogue.delete(f"/v1/admin/tokens/{bound.id}"),
        rogue.post("/v1/admin/agents", json={"name": "fresh"}),
        rogue.post("/v1/admin/agents/rogue/deactivate"),
    ]
    assert [(r.status_code, r.json()["code"]) for r in attempts] == [(403, "permission_denied")] * len(attempts)
    assert rogue.get("/v1/admin/tokens").status_code == 200  # reading is not a write
    assert [a["active"] for a in admin.get("/v1/admin/agents").json()["items"] if a["id"] == "rogue"] == [False]
