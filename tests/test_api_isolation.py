"""Two organisations and two users: nobody ever sees, changes or learns of another's memories."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient


@pytest.fixture
def ann(make_client) -> TestClient:
    return make_client("acme", "ann")


@pytest.fixture
def bob(make_client) -> TestClient:
    """Same organisation as ann, another user."""
    return make_client("acme", "bob")


@pytest.fixture
def eve(make_client) -> TestClient:
    """Another organisation, same user name as ann."""
    return make_client("evil", "ann")


@pytest.fixture
def secret(ann: TestClient) -> dict:
    ann.put("/v1/memory/keypaths/user.pin", json={"content": "secret pin 1234 zebra"})
    return ann.post("/v1/memory", json={"content": "secret zebra plan", "tags": ["zebra"]}).json()


@pytest.mark.parametrize("intruder", ["bob", "eve"])
def test_private_memories_are_invisible(request, secret: dict, intruder: str) -> None:
    other: TestClient = request.getfixturevalue(intruder)
    memory_id = secret["id"]
    assert other.get("/v1/memory").json() == {"items": [], "next_cursor": None}
    assert other.get("/v1/memory/search", params={"q": "secret zebra"}).json() == {"results": []}
    assert other.get("/v1/memory/search").json() == {"results": []}
    assert other.get("/v1/memory/search", params={"tags": "zebra"}).json() == {"results": []}
    assert other.get("/v1/memory/export").text == ""
    assert other.get("/v1/memory/keypaths/user.pin").status_code == 404
    for response in (
        other.get(f"/v1/memory/{memory_id}"),
        other.get(f"/v1/memory/{memory_id}/history"),
        other.patch(f"/v1/memory/{memory_id}", json={"content": "pwned"}),
        other.delete(f"/v1/memory/{memory_id}"),
        other.post(f"/v1/memory/{memory_id}/feedback", json={"feedback": "incorrect"}),
    ):
        assert response.status_code == 404
        assert response.json()["code"] == "not_found"


@pytest.mark.parametrize("intruder", ["bob", "eve"])
def test_intruders_leave_no_trace(request, ann: TestClient, secret: dict, intruder: str) -> None:
    other: TestClient = request.getfixturevalue(intruder)
    other.put("/v1/memory/keypaths/user.pin", json={"content": "their own pin"})
    other.post("/v1/memory", json={"content": "secret zebra plan"}, headers={"Idempotency-Key": "k"})
    assert ann.get(f"/v1/memory/{secret['id']}").json() == secret
    assert ann.get("/v1/memory/keypaths/user.pin").json()["content"] == "secret pin 1234 zebra"
    assert len(ann.get(f"/v1/memory/{secret['id']}/history").json()) == 1
    assert len(ann.get("/v1/memory").json()["items"]) == 2


def test_same_words_saved_by_two_users_are_two_memories(ann: TestClient, bob: TestClient, secret: dict) -> None:
    theirs = bob.post("/v1/memory", json={"content": "secret zebra plan", "tags": ["zebra"]})
    assert theirs.status_code == 201 and theirs.json()["id"] != secret["id"]


def test_org_scope_is_shared_within_the_org_only(ann: TestClient, bob: TestClient, eve: TestClient) -> None:
    shared = ann.post("/v1/memory", json={"content": "office wifi password is hunter2", "scope": "org"}).json()
    assert bob.get(f"/v1/memory/{shared['id']}").status_code == 200
    assert [h["id"] for h in bob.get("/v1/memory/search", params={"q": "wifi"}).json()["results"]] == [shared["id"]]
    assert eve.get(f"/v1/memory/{shared['id']}").status_code == 404
    assert eve.get("/v1/memory/search", params={"q": "wifi"}).json() == {"results": []}
    assert bob.get("/v1/memory/export").text == ""
