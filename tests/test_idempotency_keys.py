"""Idempotency keys: an unambiguous encoding of their parts, and no key held by a deleted memory."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from memory_bank.store.idempotency import content_key, header_key, normalized

migration = importlib.import_module("memory_bank.store.migrations.versions.0004_owner_integrity")

ids = st.text(min_size=1, max_size=12, alphabet=st.sampled_from("ab:|\\\",[]\x00 é"))
agents = st.none() | ids
words = st.text(max_size=24, alphabet=st.sampled_from("ab: \u0301\u00e9\t\n\"[]"))


@given(st.tuples(ids, ids, agents, words), st.tuples(ids, ids, agents, words))
def test_content_keys_collide_only_for_the_same_owner_agent_and_words(a, b) -> None:
    same = a[:3] == b[:3] and normalized(a[3]) == normalized(b[3])
    assert (content_key(*a) == content_key(*b)) == same


@given(st.tuples(ids, ids, words), st.tuples(ids, ids, words))
def test_header_keys_collide_only_for_the_same_owner_and_header(a, b) -> None:
    assert (header_key(*a) == header_key(*b)) == (a == b)


@given(ids, ids, agents, words, words)
def test_a_header_key_never_equals_a_content_key(org, user, agent, content, header) -> None:
    assert header_key(org, user, header) != content_key(org, user, agent, content)


@given(ids, ids, agents, words)
def test_migration_0004_derives_the_same_content_keys_as_the_store(org, user, agent, content) -> None:
    assert migration._content_key(org, user, agent, content) == content_key(org, user, agent, content)


def test_ids_with_separators_in_one_org_keep_their_own_memories(make_client: Callable[..., TestClient]) -> None:
    """User ``a:b`` with key ``c`` and user ``a`` with key ``b:c`` used to share one stored key: a 500."""
    first = make_client("acme", "a:b").post("/v1/memory", json={"content": "x"}, headers={"Idempotency-Key": "c"})
    second = make_client("acme", "a").post("/v1/memory", json={"content": "x"}, headers={"Idempotency-Key": "b:c"})
    assert (first.status_code, second.status_code) == (201, 201), second.text
    assert first.json()["id"] != second.json()["id"]
    assert second.json()["user_id"] == "a"


def test_a_key_replayed_after_its_memory_was_deleted_saves_a_live_memory(make_client: Callable[..., TestClient]) -> None:
    ann = make_client("acme", "ann")
    headers = {"Idempotency-Key": "save-42"}
    first = ann.post("/v1/memory", json={"content": "the user prefers vim"}, headers=headers)
    assert ann.post("/v1/memory", json={"content": "the user prefers vim"}, headers=headers).json()["id"] == first.json()["id"]
    assert ann.delete(f"/v1/memory/{first.json()['id']}").status_code == 204

    again = ann.post("/v1/memory", json={"content": "the user prefers vim"}, headers=headers)
    assert again.status_code == 201, again.text
    assert again.json()["id"] != first.json()["id"]
    assert ann.get(f"/v1/memory/{again.json()['id']}").status_code == 200
    # and now the key belongs to the live memory: a replay answers with it
    assert ann.post("/v1/memory", json={"content": "the user prefers vim"}, headers=headers).json()["id"] == again.json()["id"]


def test_saving_the_same_words_after_deleting_them_saves_a_live_memory(make_client: Callable[..., TestClient]) -> None:
    ann = make_client("acme", "ann")
    first = ann.post("/v1/memory", json={"content": "forget this"}).json()
    ann.patch(f"/v1/memory/{first['id']}", json={"tags": ["x"]})  # the key stays on version 1
    head = ann.get(f"/v1/memory/{first['id']}/history").json()[-1]
    assert ann.delete(f"/v1/memory/{head['id']}").status_code == 204
    again = ann.post("/v1/memory", json={"content": "forget this"})
    assert again.status_code == 201 and again.json()["id"] not in (first["id"], head["id"])
