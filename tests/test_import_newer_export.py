"""Importing a newer export over an older one's copy brings the copy to the newer state:
versions added since continue their chains, and memories deleted since are deleted; an older
export never brings a deleted memory back."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_bank.store import importer
from memory_bank.store.columns import new_id


def export(client: TestClient) -> str:
    response = client.get("/v1/memory/export")
    assert response.status_code == 200, response.text
    return response.text


def imported(client: TestClient, lines: str) -> dict[str, int]:
    response = client.post("/v1/memory/import", content=lines)
    assert response.status_code == 200, response.text
    return response.json()


def state(client: TestClient) -> list[tuple[Any, ...]]:
    """What an account holds now, ids aside: each current memory's words, tags and keypath."""
    items = client.get("/v1/memory", params={"limit": 100}).json()["items"]
    return sorted((m["content"], tuple(m["tags"]), m["keypath"] or "") for m in items)


def test_a_memory_deleted_since_the_last_import_is_deleted_in_the_copy(make_client: Callable[..., TestClient]) -> None:
    ann, gus = make_client("acme", "ann"), make_client("globex", "gus")
    kept = ann.post("/v1/memory", json={"content": "the boiler was serviced in May"}).json()
    gone = ann.post("/v1/memory", json={"content": "the spare key is under the blue pot"}).json()
    assert imported(gus, export(ann)) == {"imported": 2, "skipped": 0}
    ann.delete(f"/v1/memory/{gone['id']}")
    assert imported(gus, export(ann)) == {"imported": 1, "skipped": 1}
    assert state(gus) == state(ann) == [(kept["content"], (), "")]
    assert gus.get("/v1/memory/search", params={"q": "spare key"}).json()["results"] == []
    # The copy let its key go, as a delete does: saving the words again makes a live memory.
    assert gus.post("/v1/memory", json={"content": gone["content"]}).status_code == 201
    assert imported(gus, export(ann)) == {"imported": 0, "skipped": 2}  # and a repeat changes nothing


def test_an_older_export_does_not_bring_a_deleted_memory_back(make_client: Callable[..., TestClient]) -> None:
    ann = make_client("acme", "ann")
    gone = ann.post("/v1/memory", json={"content": "call the plumber on Monday"}).json()
    before = export(ann)
    ann.delete(f"/v1/memory/{gone['id']}")
    assert imported(ann, before) == {"imported": 0, "skipped": 1}
    assert state(ann) == []


def test_a_keypath_whose_value_was_deleted_and_set_again_imports(make_client: Callable[..., TestClient]) -> None:
    ann, gus = make_client("acme", "ann"), make_client("globex", "gus")
    old = ann.put("/v1/memory/keypaths/user.city", json={"content": "Leeds"}).json()
    imported(gus, export(ann))
    ann.delete(f"/v1/memory/{old['id']}")
    ann.post("/v1/memory", json={"content": "York", "keypath": "user.city"})
    assert imported(gus, export(ann)) == {"imported": 2, "skipped": 0}  # the tombstone and the new value
    assert gus.get("/v1/memory/keypaths/user.city").json()["content"] == "York"


def test_a_tombstone_of_a_memory_changed_here_since_is_skipped(make_client: Callable[..., TestClient]) -> None:
    """The copy's own later version is the account's current one: the file's deletion of an older one leaves it."""
    ann, gus = make_client("acme", "ann"), make_client("globex", "gus")
    memory = ann.post("/v1/memory", json={"content": "the gate code is 4471"}).json()
    imported(gus, export(ann))
    copy = gus.get("/v1/memory").json()["items"][0]
    gus.patch(f"/v1/memory/{copy['id']}", json={"content": "the gate code is 5582"})
    ann.delete(f"/v1/memory/{memory['id']}")
    assert imported(gus, export(ann)) == {"imported": 0, "skipped": 1}
    assert state(gus) == [("the gate code is 5582", (), "")]


WORDS = st.sampled_from(["tea", "coffee", "the dentist is Dr Hale", "ünïcödé 🙂", "rent due 1st"])
STEPS = st.lists(
    st.tuples(st.sampled_from(["save", "patch", "delete", "put"]), st.integers(0, 9), WORDS, st.sampled_from(["a", "b"])),
    min_size=1,
    max_size=8,
)


def apply(source: TestClient, steps: list[Any]) -> None:
    """Save, change, delete and put in the source account, as ``steps`` say."""
    for kind, pick, words, keypath in steps:
        heads = source.get("/v1/memory", params={"limit": 100}).json()["items"]
        if kind == "save" or (not heads and kind != "put"):
            source.post("/v1/memory", json={"content": words, "tags": [keypath]})
        elif kind == "put":
            source.put(f"/v1/memory/keypaths/user.{keypath}", json={"content": words})
        elif kind == "patch":
            source.patch(f"/v1/memory/{heads[pick % len(heads)]['id']}", json={"content": words + "!"})
        else:
            source.delete(f"/v1/memory/{heads[pick % len(heads)]['id']}")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=STEPS, after=STEPS)
def test_importing_each_newer_export_keeps_a_copy_equal_to_its_source(
    make_client: Callable[..., TestClient], before: list[Any], after: list[Any]
) -> None:
    source, copy = make_client(new_id(), "ann"), make_client(new_id(), "gus")
    apply(source, before)
    imported(copy, export(source))
    assert state(copy) == state(source)
    apply(source, after)
    lines = export(source)
    imported(copy, lines)
    assert state(copy) == state(source)
    assert imported(copy, lines)["imported"] == 0  # a repeat of the newer export writes nothing
    exported = [json.loads(line) for line in export(copy).splitlines()]
    assert all(r["deleted_at"] is None or r["superseded_at"] is None for r in exported)


def updated(client: TestClient) -> dict[str, datetime]:
    """Each of the account's rows (every version) by id: when it last changed."""
    return {r["id"]: datetime.fromisoformat(r["updated_at"]) for r in map(json.loads, export(client).splitlines())}


def earlier(line: dict[str, Any], skew: timedelta) -> dict[str, Any]:
    """``line`` as a source whose clock runs ``skew`` behind the copy's would have written it."""
    moved = {k: (datetime.fromisoformat(v) - skew).isoformat() for k, v in line.items() if k.endswith("_at") and v}
    return line | moved


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=STEPS, after=STEPS, skew=st.timedeltas(timedelta(0), timedelta(days=3650)))
def test_no_imported_tombstone_or_version_moves_updated_at_back(
    make_client: Callable[..., TestClient], before: list[Any], after: list[Any], skew: timedelta
) -> None:
    """A newer export from a clock behind this one (another host's, or the file edited) deletes a
    copy at a ``deleted_at``, or supersedes it at a ``created_at``, before the copy last changed:
    the write is made here, so no row's ``updated_at`` goes back."""
    source, copy = make_client(new_id(), "ann"), make_client(new_id(), "gus")
    apply(source, before)
    imported(copy, export(source))
    was = updated(copy)
    apply(source, after)
    lines = [earlier(json.loads(line), skew) for line in export(source).splitlines()]
    imported(copy, "".join(json.dumps(line) + "\n" for line in lines))
    now = updated(copy)
    assert {i: (was[i], now[i]) for i in was if now[i] < was[i]} == {}
    assert state(copy) == state(source)


def test_a_tombstone_from_a_clock_behind_deletes_now(make_client: Callable[..., TestClient]) -> None:
    """The copy is deleted as of now (``updated_at``) and says when the source deleted it (``deleted_at``)."""
    ann, gus = make_client("acme", "ann"), make_client("globex", "gus")
    memory = ann.post("/v1/memory", json={"content": "the spare key is under the blue pot"}).json()
    imported(gus, export(ann))
    ann.delete(f"/v1/memory/{memory['id']}")
    [tombstone] = [json.loads(line) for line in export(ann).splitlines()]
    tombstone |= {"deleted_at": "2001-01-01T00:00:00Z"}
    started = datetime.now().astimezone()
    assert imported(gus, json.dumps(tombstone) + "\n") == {"imported": 1, "skipped": 0}
    [copy] = [json.loads(line) for line in export(gus).splitlines()]
    assert datetime.fromisoformat(copy["deleted_at"]) == datetime.fromisoformat("2001-01-01T00:00:00+00:00")
    assert datetime.fromisoformat(copy["updated_at"]) >= started


def test_a_file_that_deletes_a_memory_and_supersedes_it_writes_nothing(make_client: Callable[..., TestClient]) -> None:
    ann, gus = make_client("acme", "ann"), make_client("globex", "gus")
    ann.post("/v1/memory", json={"content": "the gate code is 4471", "keypath": "user.gate"})
    imported(gus, export(ann))
    [copy] = [json.loads(line) for line in export(gus).splitlines()]
    tombstone = copy | {"deleted_at": "2026-01-01T00:00:00Z"}
    successor = copy | {"id": new_id(), "supersedes_id": copy["id"], "version": 2, "content": "the gate code is 9999"}
    refused = gus.post("/v1/memory/import", content="".join(json.dumps(r) + "\n" for r in (tombstone, successor)))
    assert refused.status_code == 422, refused.text
    assert [e["field"] for e in refused.json()["errors"]] == ["/body/line/2"]
    assert state(gus) == [("the gate code is 4471", (), "user.gate")]  # nothing deleted


def test_a_tombstone_line_that_is_not_the_stored_version_deletes_nothing(make_client: Callable[..., TestClient]) -> None:
    ann = make_client("acme", "ann")
    memory = ann.post("/v1/memory", json={"content": "call the plumber on Monday"}).json()
    [line] = [json.loads(line) for line in export(ann).splitlines()]
    for other in ({"version": 7}, {"content": "something else"}, {"supersedes_id": new_id()}):
        forged = line | other | {"deleted_at": "2026-01-01T00:00:00Z"}
        assert imported(ann, json.dumps(forged) + "\n") == {"imported": 0, "skipped": 1}
    assert ann.get(f"/v1/memory/{memory['id']}").status_code == 200


def test_deletions_are_written_in_batches(make_client: Callable[..., TestClient], monkeypatch) -> None:
    """A newer export may delete thousands: each batch is its own transaction (one change record
    each, and the write lock let go between them), as inserts are."""
    monkeypatch.setattr(importer, "BATCH_ROWS", 3)
    ann, gus = make_client("acme", "ann"), make_client("globex", "gus")
    saved = [ann.post("/v1/memory", json={"content": f"fact number {i}"}).json() for i in range(10)]
    imported(gus, export(ann))
    for memory in saved[:8]:
        ann.delete(f"/v1/memory/{memory['id']}")
    assert imported(gus, export(ann)) == {"imported": 8, "skipped": 2}
    assert state(gus) == state(ann) == [("fact number 8", (), ""), ("fact number 9", (), "")]
    assert gus.post("/v1/memory", json={"content": "fact number 3"}).status_code == 201
