"""Idempotency keys: an unambiguous encoding of their parts, and no key held by a deleted memory."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import Engine
from support.clients import DEFAULT_AGENT
from support.revisions import rerun

from memory_bank.store import MemoryFilter, MemoryStore
from memory_bank.store.columns import new_id
from memory_bank.store.idempotency import content_key, header_key, normalized
from memory_bank.store.tables import MemoryRow

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
    ann.patch(f"/v1/memory/{first['id']}", json={"tags": ["x"]})  # the key moves to version 2
    head = ann.get(f"/v1/memory/{first['id']}/history").json()[-1]
    assert ann.delete(f"/v1/memory/{head['id']}").status_code == 204
    again = ann.post("/v1/memory", json={"content": "forget this"})
    assert again.status_code == 201 and again.json()["id"] not in (first["id"], head["id"])


def test_the_words_a_memory_says_now_are_the_ones_a_save_finds(make_client: Callable[..., TestClient]) -> None:
    """Saving the words a memory was changed to made a second live memory, and saving the words
    it no longer says answered with the superseded version: the content key stayed on version 1."""
    ann = make_client("acme", "ann")
    first = ann.post("/v1/memory", json={"content": "standup is at 9:30"}).json()
    changed = ann.patch(f"/v1/memory/{first['id']}", json={"content": "standup is at 10:00"}).json()
    again = ann.post("/v1/memory", json={"content": "standup is at 10:00"})
    assert (again.status_code, again.json()["id"]) == (200, changed["id"])
    restated = ann.post("/v1/memory", json={"content": "standup is at 9:30"})
    assert restated.status_code == 201 and restated.json()["superseded_at"] is None
    assert restated.json()["id"] not in (first["id"], changed["id"])
    # a header key stays with the save that made it: its replay is the first record
    keyed = ann.post("/v1/memory", json={"content": "lunch at noon"}, headers={"Idempotency-Key": "k1"}).json()
    ann.patch(f"/v1/memory/{keyed['id']}", json={"content": "lunch at one"})
    replay = ann.post("/v1/memory", json={"content": "lunch at noon"}, headers={"Idempotency-Key": "k1"})
    assert (replay.status_code, replay.json()["id"]) == (200, keyed["id"])


def test_a_change_to_words_another_memory_holds_keeps_both(make_client: Callable[..., TestClient]) -> None:
    """The key of words another memory said first stays with it; the change is written all the same."""
    ann = make_client("acme", "ann")
    holder = ann.post("/v1/memory", json={"content": "the office is in Leeds"}).json()
    other = ann.post("/v1/memory", json={"content": "the office is in York"}).json()
    moved = ann.patch(f"/v1/memory/{other['id']}", json={"content": "the office is in Leeds"})
    assert moved.status_code == 200 and moved.json()["version"] == 2
    assert ann.post("/v1/memory", json={"content": "the office is in Leeds"}).json()["id"] == holder["id"]
    assert ann.post("/v1/memory", json={"content": "the office is in York"}).status_code == 201


@pytest.mark.parametrize("holder_goes", ["changed", "deleted"])
def test_words_kept_by_a_second_memory_are_found_once_the_first_lets_go(
    make_client: Callable[..., TestClient], holder_goes: str
) -> None:
    """The key of words given up passes to a memory that still says them, so saving them finds it."""
    ann = make_client("acme", "ann")
    holder = ann.post("/v1/memory", json={"content": "the office is in Leeds"}).json()
    other = ann.post("/v1/memory", json={"content": "the office is in York"}).json()
    kept = ann.patch(f"/v1/memory/{other['id']}", json={"content": "the office is in Leeds"}).json()
    if holder_goes == "changed":
        ann.patch(f"/v1/memory/{holder['id']}", json={"content": "the office was in Leeds"})
    else:
        assert ann.delete(f"/v1/memory/{holder['id']}").status_code == 204
    saved = ann.post("/v1/memory", json={"content": "the office is in Leeds"})
    assert (saved.status_code, saved.json()["id"]) == (200, kept["id"])
    assert ann.post("/v1/memory", json={"content": "the office is in York"}).status_code == 201


#: Saves, changes and deletes over a few words, so that memories come to say each other's words.
WRITES = st.lists(
    st.tuples(st.sampled_from(["save", "change", "delete"]), st.integers(0, 3), st.sampled_from(["red", "blue"])),
    max_size=10,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes=WRITES)
def test_saving_words_a_current_memory_says_answers_with_it(store: MemoryStore, make_principal: Any, writes) -> None:
    owner = make_principal("acme", new_id(), DEFAULT_AGENT)  # a fresh owner per example
    heads: list[MemoryRow] = []
    for write, pick, words in writes:
        if write == "save" or not heads:
            store.create(owner, {"content": words})
        elif write == "change":
            store.patch(owner, heads[pick % len(heads)].id, {"content": words})
        else:
            store.delete(owner, heads[pick % len(heads)].id)
        heads = store.page(owner, MemoryFilter(), 100)[0]
        for head in heads:
            saved, created = store.create(owner, {"content": head.content})
            assert not created and saved.content == head.content and saved.superseded_at is None


def test_a_key_is_handed_on_only_within_one_owner_and_agent(make_client: Callable[..., TestClient]) -> None:
    ann = make_client("acme", "ann")
    bob = make_client("acme", "bob")
    holder = ann.post("/v1/memory", json={"content": "standup at nine"}).json()
    bobs = bob.post("/v1/memory", json={"content": "standup at ten"}).json()
    bob.patch(f"/v1/memory/{bobs['id']}", json={"content": "standup at nine"})
    ann.delete(f"/v1/memory/{holder['id']}")
    assert ann.post("/v1/memory", json={"content": "standup at nine"}).status_code == 201


def test_an_imported_tombstone_frees_the_keys_as_a_delete_does(make_client: Callable[..., TestClient]) -> None:
    ann = make_client("acme", "ann")
    saved = ann.post("/v1/memory", json={"content": "keyed thing"}, headers={"Idempotency-Key": "k-tomb"}).json()
    stamp = "2030-01-01T00:00:00Z"
    tombstone = saved | {"id": "T" * 21, "supersedes_id": saved["id"], "version": 2, "deleted_at": stamp, "created_at": stamp, "updated_at": stamp}
    imported = ann.post("/v1/memory/import", content=json.dumps(tombstone) + "\n", headers={"Content-Type": "application/x-ndjson"})
    assert imported.status_code == 200, imported.text
    assert ann.get(f"/v1/memory/{saved['id']}").status_code == 404
    replay = ann.post("/v1/memory", json={"content": "keyed thing"}, headers={"Idempotency-Key": "k-tomb"})
    assert replay.status_code == 201 and replay.json()["id"] != saved["id"]


@pytest.mark.parametrize("imported", ["a tombstone", "a change"])
def test_an_imported_version_over_the_key_holder_hands_the_key_on(make_client: Callable[..., TestClient], imported: str) -> None:
    ann = make_client("acme", "ann")
    holder = ann.post("/v1/memory", json={"content": "the office is in Leeds"}).json()
    twin = ann.patch(f"/v1/memory/{ann.post('/v1/memory', json={'content': 'the office is in York'}).json()['id']}", json={"content": "the office is in Leeds"}).json()
    stamp = "2030-01-01T00:00:00Z"
    successor = holder | {"id": "S" * 21, "supersedes_id": holder["id"], "version": 2, "created_at": stamp, "updated_at": stamp}
    successor |= {"deleted_at": stamp} if imported == "a tombstone" else {"content": "the office was in Leeds"}
    answer = ann.post("/v1/memory/import", content=json.dumps(successor) + "\n", headers={"Content-Type": "application/x-ndjson"})
    assert answer.status_code == 200, answer.text
    saved = ann.post("/v1/memory", json={"content": "the office is in Leeds"})
    assert (saved.status_code, saved.json()["id"]) == (200, twin["id"])


def test_a_keypath_value_put_again_after_a_change_is_found(make_client: Callable[..., TestClient]) -> None:
    ann = make_client("acme", "ann")
    ann.put("/v1/memory/keypaths/user.theme", json={"content": "dark"})
    now = ann.put("/v1/memory/keypaths/user.theme", json={"content": "light"}).json()
    saved = ann.post("/v1/memory", json={"content": "light"})
    assert saved.status_code == 200 and saved.json()["id"] == now["id"]


def test_revision_0008_moves_the_content_keys_of_chains_changed_before(
    engine: Engine, store: MemoryStore, make_principal: Any, make_client: Callable[..., TestClient]
) -> None:
    """Chains changed before the store moved keys hold theirs on version 1; the upgrade gives it to the
    current version, leaves a key another memory holds with it, and leaves header keys alone."""
    ann = make_principal("acme", "ann", DEFAULT_AGENT)
    changed, _ = store.create(ann, {"content": "rent is due on the 1st"})
    changed_head = store.patch(ann, changed.id, {"content": "rent is due on the 5th"})
    holder, _ = store.create(ann, {"content": "the gym opens at 6"})
    clash, _ = store.create(ann, {"content": "the gym opens at 7"})
    clash_head = store.patch(ann, clash.id, {"content": "the gym opens at 6"})
    keyed, _ = store.create(ann, {"content": "lunch at noon"}, idempotency_key="k1")
    keyed_head = store.patch(ann, keyed.id, {"content": "lunch at one"})
    with engine.begin() as connection:  # as the store left them before: every key on version 1
        connection.execute(sa.update(MemoryRow).where(MemoryRow.version > 1).values(idempotency_key=None))
        for first in (changed, clash):
            key = content_key("acme", "ann", DEFAULT_AGENT, first.content)
            connection.execute(sa.update(MemoryRow).where(MemoryRow.pk == first.pk).values(idempotency_key=key))
    rerun(engine, "0008", before="0007")
    with engine.connect() as connection:
        keys = dict(connection.execute(sa.select(MemoryRow.id, MemoryRow.idempotency_key)).all())
    assert keys[changed.id] is None and keys[changed_head.id] == content_key("acme", "ann", DEFAULT_AGENT, "rent is due on the 5th")
    assert keys[clash.id] is None and keys[clash_head.id] is None and keys[holder.id] is not None
    assert keys[keyed.id] == header_key("acme", "ann", "k1")  # a header key stays with its save
    assert keys[keyed_head.id] == content_key("acme", "ann", DEFAULT_AGENT, "lunch at one")
    owner = make_client("acme", "ann")
    assert owner.post("/v1/memory", json={"content": "rent is due on the 5th"}).json()["id"] == changed_head.id
    assert owner.post("/v1/memory", json={"content": "rent is due on the 1st"}).status_code == 201
