"""A tag that looks the same is the same tag: NFC where it enters and where it is asked for, each once.

"café" from one keyboard is U+00E9, from another "e" + U+0301; a filter by one missed a
memory tagged by the other, and ``["a", "a"]`` was stored twice (a new user's pass). Case is
the writer's. Rows of before are put right by revision 0011. ``store.tags``.
"""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st
from sqlalchemy.engine import Engine
from support.clients import DEFAULT_AGENT
from support.revisions import rerun
from support.transfer import exported, ndjson
from test_content_visible import ann  # noqa: F401 (a fixture)

from memory_bank.settings import Settings
from memory_bank.store import MemoryStore
from memory_bank.store.database import create_schema
from memory_bank.store.tables import MemoryRow
from memory_bank.store.tags import MAX_TAG_LENGTH, tag_set

CAFE_COMPOSED, CAFE_DECOMPOSED = "caf\u00e9", "cafe\u0301"
#: Letters with marks that compose, and marks that stack: every spelling a keyboard may send.
SPELLINGS = st.text(st.sampled_from("aeiouAEIOUnNcC\u0301\u0300\u0308\u0303\u0327\u00e9\u00f1\u00e7\u00fc"), min_size=1, max_size=20).filter(
    lambda t: not unicodedata.combining(t[0])
)


@pytest.fixture
def settings(database_url: str) -> Settings:
    """Many saves in a minute: the property test's, not a client's rate."""
    return Settings(database_url=database_url, rate_limit_rpm=100_000)


def found(client: TestClient, tag: str) -> set[str]:
    """Ids of the memories the list and the search find by ``tag`` (both must agree)."""
    listed = {m["id"] for m in client.get("/v1/memory", params={"tags": tag}).json()["items"]}
    searched = {r["id"] for r in client.get("/v1/memory/search", params={"q": "tagged", "tags": tag}).json()["results"]}
    assert listed == searched, tag
    return listed


@examples(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spelling=SPELLINGS)
def test_a_tag_is_stored_in_nfc_and_found_by_every_spelling_of_it(ann: TestClient, spelling: str) -> None:  # noqa: F811
    created = ann.post("/v1/memory", json={"content": f"tagged {spelling}", "tags": [spelling]})
    assert created.status_code in (200, 201), created.text
    assert created.json()["tags"] == [unicodedata.normalize("NFC", spelling)]
    for form in ("NFC", "NFD"):
        assert created.json()["id"] in found(ann, unicodedata.normalize(form, spelling)), form


def test_every_write_keeps_each_tag_once_in_its_first_place_and_keeps_case(ann: TestClient) -> None:  # noqa: F811
    given_tags = ["a", CAFE_DECOMPOSED, "a", "A", CAFE_COMPOSED]
    kept = ["a", CAFE_COMPOSED, "A"]
    saved = ann.post("/v1/memory", json={"content": "tagged once", "tags": given_tags}).json()
    put = ann.put("/v1/memory/keypaths/cafe.menu", json={"content": "tagged value", "tags": given_tags}).json()
    patched = ann.patch(f"/v1/memory/{saved['id']}", json={"tags": [*given_tags, "b"]}).json()
    assert (saved["tags"], put["tags"], patched["tags"]) == (kept, kept, [*kept, "b"])
    assert found(ann, CAFE_DECOMPOSED) == {put["id"], patched["id"]}
    assert found(ann, "A") == found(ann, "a") == {put["id"], patched["id"]}
    assert ann.get("/v1/memory", params={"tags": "c"}).json()["items"] == []


def test_a_patch_that_only_respells_the_tags_writes_no_version(ann: TestClient) -> None:  # noqa: F811
    saved = ann.post("/v1/memory", json={"content": "tagged and kept", "tags": [CAFE_COMPOSED]}).json()
    again = ann.patch(f"/v1/memory/{saved['id']}", json={"tags": [CAFE_DECOMPOSED, CAFE_COMPOSED]})
    assert again.status_code == 200 and again.json()["id"] == saved["id"] and again.json()["version"] == 1


def test_an_import_line_s_tags_are_put_in_nfc_each_once(ann: TestClient) -> None:  # noqa: F811
    ann.post("/v1/memory", json={"content": "tagged to export"})
    record = {**exported(ann)[0], "id": "B" * 21, "content": "tagged on import", "tags": [CAFE_DECOMPOSED, CAFE_COMPOSED]}
    imported = ann.post("/v1/memory/import", content=ndjson([record]), headers={"Content-Type": "application/x-ndjson"})
    assert imported.status_code == 200 and imported.json()["imported"] == 1, imported.text
    assert [m["tags"] for m in ann.get("/v1/memory", params={"tags": CAFE_COMPOSED}).json()["items"]] == [[CAFE_COMPOSED]]


def test_a_tag_that_nfc_would_lengthen_past_the_bound_stays_as_written() -> None:
    """U+0958 is two code points in NFC (a composition exclusion): 64 of them would be 128."""
    long_one = "\u0958" * MAX_TAG_LENGTH
    assert len(unicodedata.normalize("NFC", long_one)) == 2 * MAX_TAG_LENGTH
    assert tag_set([long_one, "\u0958"]) == [long_one, unicodedata.normalize("NFC", "\u0958")]


def test_the_upgrade_puts_tags_of_before_in_nfc_each_once(engine: Engine, store: MemoryStore, make_principal: Any, ann: TestClient) -> None:  # noqa: F811
    """Written past the rule (the store's own path normalises), every version and a deleted one;
    revision 0011 rewrites exactly those tags and clears their search text for the backfill."""
    principal = make_principal("acme", "ann", DEFAULT_AGENT)
    first, _ = store.create(principal, {"content": "a tagged fact from before", "tags": ["x"]})
    second = store.patch(principal, first.id, {"content": "the tagged fact from before, corrected"})
    plain, _ = store.create(principal, {"content": "an untouched tagged fact", "tags": ["plain"]})
    with engine.begin() as connection:
        connection.execute(sa.update(MemoryRow).where(MemoryRow.id != plain.id).values(tags=[CAFE_DECOMPOSED, "x", CAFE_COMPOSED, "x"]))
    rerun(engine, "0011", before="0010")
    with engine.connect() as connection:
        rows = dict(connection.execute(sa.select(MemoryRow.id, MemoryRow.tags)).all())
        cleared = set(connection.execute(sa.select(MemoryRow.id).where(MemoryRow.search_text.is_(None))).scalars())
    assert rows == {first.id: [CAFE_COMPOSED, "x"], second.id: [CAFE_COMPOSED, "x"], plain.id: ["plain"]}
    assert cleared == {first.id, second.id}
    create_schema(engine)  # the start-up backfill
    assert found(ann, CAFE_DECOMPOSED) == {second.id}
    assert [r["id"] for r in ann.get("/v1/memory/search", params={"q": "corrected"}).json()["results"]] == [second.id]
