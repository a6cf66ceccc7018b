"""Every memory operation through the real app: success shapes, status codes, error paths."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

MISSING = "AAAAAAAAAAAAAAAAAAAAA"


@pytest.fixture
def ann(make_client) -> TestClient:
    return make_client("acme", "ann", agent="claude")


def save(client: TestClient, content: str, **fields) -> dict:
    response = client.post("/v1/memory", json={"content": content, **fields})
    assert response.status_code in (200, 201), response.text
    return response.json()


def test_post_returns_the_memory_then_replays_it(ann: TestClient) -> None:
    body = {"content": "The user prefers vim", "tags": ["editor"], "contexts": [{"snippet": "I use vim"}]}
    first = ann.post("/v1/memory", json=body)
    assert first.status_code == 201
    memory = first.json()
    assert memory["agent_id"] == "claude" and memory["user_id"] == "ann"
    assert (memory["scope"], memory["category"], memory["confidence"], memory["version"]) == ("user", "fact", 0.6, 1)
    assert memory["contexts"] == [{"snippet": "I use vim"}]  # no origin: left out, never null
    assert "org_id" not in memory and "chain_id" not in memory
    again = ann.post("/v1/memory", json=body)
    assert again.status_code == 200 and again.json()["id"] == memory["id"]
    assert len(ann.get("/v1/memory").json()["items"]) == 1


def test_idempotency_key_header(ann: TestClient) -> None:
    headers = {"Idempotency-Key": "req-42"}
    assert ann.post("/v1/memory", json={"content": "a"}, headers=headers).status_code == 201
    assert ann.post("/v1/memory", json={"content": "a"}, headers=headers).status_code == 200
    conflict = ann.post("/v1/memory", json={"content": "b"}, headers=headers)
    assert conflict.status_code == 409 and conflict.json()["code"] == "conflict"


@pytest.mark.parametrize(
    ("body", "field", "rule"),
    [
        ({"content": "x" * 8001}, "/body/content", "maxLength"),
        ({"content": "x", "tags": [f"t{n}" for n in range(33)]}, "/body/tags", "maxItems"),
        ({"content": "x", "tags": ["t" * 65]}, "/body/tags/0", "maxLength"),
        ({"content": "x", "contexts": [{"snippet": "s"}] * 17}, "/body/contexts", "maxItems"),
    ],
)
def test_a_field_over_its_bound_is_422_naming_it_not_413(ann: TestClient, body, field: str, rule: str) -> None:
    """The body is small: what is wrong is one value, so the answer names it (413 is for bytes)."""
    response = ann.post("/v1/memory", json=body)
    assert response.status_code == 422
    assert response.json()["code"] == "invalid_params"
    assert [(e["field"], e["rule"]) for e in response.json()["errors"]] == [(field, rule)]


@pytest.mark.parametrize(
    "body",
    [{}, {"content": ""}, {"content": "x", "scope": "world"}, {"content": "x", "confidence": 2}, {"content": "x", "org_id": "other"}],
)
def test_bad_bodies_are_422(ann: TestClient, body) -> None:
    response = ann.post("/v1/memory", json=body)
    assert response.status_code == 422
    assert response.json()["code"] == "invalid_params"


@pytest.mark.parametrize("query", ["limit=0", "limit=101", "limit=x", "category=nope", "cursor=%21%21"])
def test_bad_list_params_are_422(ann: TestClient, query) -> None:
    response = ann.get(f"/v1/memory?{query}")
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "invalid_params"


def test_list_pages_with_cursor(ann: TestClient) -> None:
    ids = [save(ann, f"memory number {n}")["id"] for n in range(5)]
    page = ann.get("/v1/memory", params={"limit": 3}).json()
    assert [m["id"] for m in page["items"]] == ids[:1:-1]
    last = ann.get("/v1/memory", params={"limit": 3, "cursor": page["next_cursor"]}).json()
    assert [m["id"] for m in last["items"]] == ids[1::-1]
    assert last["next_cursor"] is None


def test_list_filters(ann: TestClient) -> None:
    save(ann, "tagged", tags=["a", "b"], project_id="p")
    save(ann, "other", tags=["a"], keypath="user.pref")
    assert [m["content"] for m in ann.get("/v1/memory", params=[("tags", "a"), ("tags", "b")]).json()["items"]] == ["tagged"]
    assert [m["content"] for m in ann.get("/v1/memory", params={"keypath_prefix": "user"}).json()["items"]] == ["other"]
    assert [m["content"] for m in ann.get("/v1/memory", params={"project_id": "p"}).json()["items"]] == ["tagged"]


def test_get_patch_history(ann: TestClient) -> None:
    v1 = save(ann, "editor is vim", tags=["editor"])
    assert ann.get(f"/v1/memory/{v1['id']}").json() == v1
    patched = ann.patch(f"/v1/memory/{v1['id']}", json={"content": "editor is helix", "expected_version": 1})
    assert patched.status_code == 200
    v2 = patched.json()
    assert (v2["version"], v2["supersedes_id"], v2["tags"]) == (2, v1["id"], ["editor"]) and v2["id"] != v1["id"]
    assert ann.get(f"/v1/memory/{v1['id']}").json()["superseded_at"] is not None
    history = ann.get(f"/v1/memory/{v1['id']}/history").json()
    assert [m["id"] for m in history] == [v1["id"], v2["id"]]
    assert [m["content"] for m in ann.get("/v1/memory").json()["items"]] == ["editor is helix"]
    assert len(ann.get("/v1/memory", params={"include_superseded": True}).json()["items"]) == 2


def test_patch_conflicts(ann: TestClient) -> None:
    v1 = save(ann, "a")
    stale = ann.patch(f"/v1/memory/{v1['id']}", json={"content": "b", "expected_version": 2})
    assert stale.status_code == 409
    ann.patch(f"/v1/memory/{v1['id']}", json={"content": "b"})
    superseded = ann.patch(f"/v1/memory/{v1['id']}", json={"content": "c"})
    assert superseded.status_code == 409 and superseded.json()["code"] == "conflict"


def test_patch_errors(ann: TestClient) -> None:
    v1 = save(ann, "a")
    empty = ann.patch(f"/v1/memory/{v1['id']}", json={})
    assert empty.status_code == 422  # told what it may send, not pydantic's "Value error, ... field(s)"
    assert empty.json()["errors"][0]["message"].startswith("send at least one field of: content, tags,")
    assert ann.patch(f"/v1/memory/{v1['id']}", json={"scope": "org"}).status_code == 422
    assert ann.patch(f"/v1/memory/{v1['id']}", json={"content": "x" * 8001}).status_code == 422
    assert ann.patch(f"/v1/memory/{MISSING}", json={"content": "b"}).status_code == 404
    assert ann.get("/v1/memory/not-an-id").status_code == 422


def test_delete_is_soft(ann: TestClient) -> None:
    memory = save(ann, "forget this")
    assert ann.delete(f"/v1/memory/{memory['id']}").status_code == 204
    assert ann.get(f"/v1/memory/{memory['id']}").status_code == 404
    assert ann.delete(f"/v1/memory/{memory['id']}").status_code == 404
    assert ann.get("/v1/memory/search", params={"q": "forget"}).json() == {"results": []}
    history = ann.get(f"/v1/memory/{memory['id']}/history").json()
    assert history[0]["deleted_at"] is not None
    assert ann.post("/v1/memory", json={"content": "forget this"}).status_code == 201


def test_keypaths(ann: TestClient) -> None:
    assert ann.get("/v1/memory/keypaths/user.editor").status_code == 404
    first = ann.put("/v1/memory/keypaths/user.editor", json={"content": "vim"})
    assert first.status_code == 201 and first.json()["keypath"] == "user.editor"
    second = ann.put("/v1/memory/keypaths/user.editor", json={"content": "helix", "category": "preference"})
    assert second.status_code == 200
    assert (second.json()["version"], second.json()["supersedes_id"]) == (2, first.json()["id"])
    assert ann.get("/v1/memory/keypaths/user.editor").json()["content"] == "helix"
    history = ann.get(f"/v1/memory/{second.json()['id']}/history").json()
    assert [m["content"] for m in history] == ["vim", "helix"]
    assert ann.put("/v1/memory/keypaths/bad..path", json={"content": "x"}).status_code == 422
    assert ann.put("/v1/memory/keypaths/user.editor", json={"content": "x", "keypath": "y"}).status_code == 422


def test_feedback(ann: TestClient) -> None:
    memory = save(ann, "useful")
    response = ann.post(f"/v1/memory/{memory['id']}/feedback", json={"feedback": "helpful", "session_id": "s1"})
    assert response.status_code == 201
    assert response.json()["memory_id"] == memory["id"] and response.json()["session_id"] == "s1"
    assert ann.post(f"/v1/memory/{memory['id']}/feedback", json={"feedback": "meh"}).status_code == 422
    assert ann.post(f"/v1/memory/{memory['id']}/feedback", json={"feedback": "helpful", "notes": "n" * 2001}).status_code == 422
    assert ann.post(f"/v1/memory/{MISSING}/feedback", json={"feedback": "helpful"}).status_code == 404
