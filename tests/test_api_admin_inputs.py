"""What the admin API refuses in a request, and with which answer: REST through the app, on both backends.

An id that is too long, a duplicated permission, an id that looks like another: each is
a 422 ``invalid_params`` naming the field, never a silent fix-up and never a 413 (which
is kept for a body with more bytes than its schema admits).
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

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
