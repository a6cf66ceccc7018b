"""A save of words already saved: a repeat answers with the first record only when it asks for
nothing that record lacks; otherwise 409 names the memory, and nothing is written."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_bank.store.agents import AgentStore
from memory_bank.store.columns import new_id

#: Values a save may set beside its words, few enough that two draws often agree.
FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "tags": st.lists(st.sampled_from(["home", "work", "ünï"]), max_size=3, unique=True),
    "contexts": st.lists(st.fixed_dictionaries({"snippet": st.sampled_from(["said so", "🙂"])}), max_size=1),
    "scope": st.sampled_from(["user", "org"]),
    "source": st.sampled_from(["chat", "tool:web"]),
    "category": st.sampled_from(["fact", "preference"]),
    "confidence": st.sampled_from([0.6, 0.9]),
    "project_id": st.sampled_from(["alpha", "beta"]),
    "keypath": st.sampled_from(["user.home", "user.work"]),
}
SAVES = st.fixed_dictionaries({}, optional=FIELDS)
#: What a field the first save left out reads back as.
DEFAULTS = {"tags": [], "contexts": [], "scope": "user", "source": None, "category": "fact", "confidence": 0.6, "project_id": None, "keypath": None}


def asked_otherwise(first: dict[str, Any], second: dict[str, Any]) -> set[str]:
    def held(name: str) -> Any:
        return first.get(name, DEFAULTS[name])

    return {
        name for name, value in second.items() if (set(value) != set(held(name)) if name == "tags" else value != held(name))
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=SAVES, second=SAVES, header=st.booleans())
def test_a_save_of_the_same_words_repeats_only_what_was_asked(
    make_client: Callable[..., TestClient], first: dict[str, Any], second: dict[str, Any], header: bool
) -> None:
    client = make_client(new_id(), new_id())  # a fresh owner (and rate budget) per example
    headers = {"Idempotency-Key": "k-1"} if header else {}
    words = "the spare key is under the blue pot"
    saved = client.post("/v1/memory", json={"content": words, **first}, headers=headers)
    assert saved.status_code == 201, saved.text
    again = client.post("/v1/memory", json={"content": words, **second}, headers=headers)
    differing = asked_otherwise(first, second)
    if differing:
        assert again.status_code == 409, again.text
        problem = again.json()
        assert problem["code"] == "conflict"
        assert saved.json()["id"] in problem["detail"]  # the memory these words were saved as
        assert all(name in problem["detail"] for name in differing)
    else:
        assert again.status_code == 200, again.text
        assert again.json() == saved.json()
    listed = client.get("/v1/memory", params={"limit": 100}).json()["items"]
    assert [m["id"] for m in listed] == [saved.json()["id"]]  # nothing more was written
    if "keypath" in first:
        assert client.get(f"/v1/memory/keypaths/{first['keypath']}").json()["id"] == saved.json()["id"]


def test_the_conflict_says_how_to_change_what_a_patch_can(make_client: Callable[..., TestClient]) -> None:
    client = make_client("acme", "ann")
    saved = client.post("/v1/memory", json={"content": "tea, no sugar", "tags": ["drinks"]}).json()
    again = client.post("/v1/memory", json={"content": "tea, no sugar", "tags": ["food"], "keypath": "user.tea"})
    assert again.status_code == 409
    detail = again.json()["detail"]
    assert f"PATCH /v1/memory/{saved['id']} to change tags" in detail and "keypath" in detail
    patched = client.patch(f"/v1/memory/{saved['id']}", json={"tags": ["food"]})
    assert patched.status_code == 200, patched.text
    assert client.post("/v1/memory", json={"content": "tea, no sugar", "tags": ["food"]}).status_code == 200


def test_a_key_replayed_for_another_agent_is_not_a_repeat(app, make_client: Callable[..., TestClient]) -> None:
    """An agent-less token names the agent in the body; the same key and words for another agent
    is another save, so it is refused, not answered with the first agent's memory."""
    agents = AgentStore(app.state.engine)
    first, second = agents.create("acme", "laptop"), agents.create("acme", "phone")
    client = make_client("acme", "ann", agent=None)
    key = {"Idempotency-Key": "k-agent"}
    saved = client.post("/v1/memory", json={"content": "agent x", "agent_id": first.id}, headers=key)
    assert saved.status_code == 201, saved.text
    again = client.post("/v1/memory", json={"content": "agent x", "agent_id": second.id}, headers=key)
    assert again.status_code == 409 and "agent_id" in again.json()["detail"]
    assert client.post("/v1/memory", json={"content": "agent x", "agent_id": first.id}, headers=key).status_code == 200


def test_a_key_replayed_after_a_patch_is_told_the_current_version(make_client: Callable[..., TestClient]) -> None:
    client = make_client("acme", "ann")
    key = {"Idempotency-Key": "k-patched"}
    first = client.post("/v1/memory", json={"content": "tea", "tags": ["a"]}, headers=key).json()
    head = client.patch(f"/v1/memory/{first['id']}", json={"tags": ["b"]}).json()
    again = client.post("/v1/memory", json={"content": "tea", "tags": ["b"]}, headers=key)
    assert again.status_code == 409  # the save the key names asked for ["a"]
    assert f"PATCH /v1/memory/{head['id']} to change tags" in again.json()["detail"]
    assert client.post("/v1/memory", json={"content": "tea", "tags": ["a"]}, headers=key).json()["id"] == first["id"]
