"""A tag must hold a character someone can see, as content must.

A tag of a zero-width space alone, or of NULs, was stored: a label nobody can read, type
back into a filter or tell apart from another blank one. The spec's ``Tag`` shares
Content's pattern (one YAML anchor), so every door that takes a tag (the three writes,
import, the ``tags`` filter of listing and search, MCP) refuses it with 422
``invalid_params`` at that tag, in the same words as for content. Tags stored before the
rule stay readable: the response schema's tags are plain strings.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st
from pydantic import ValidationError
from sqlalchemy.engine import Engine
from support.clients import DEFAULT_AGENT, MakeClient, MakeToken
from support.mcp_live import call_tool
from support.revisions import rerun
from support.transfer import exported, ndjson
from test_content_visible import (  # noqa: F401 (ann: a fixture)
    INVISIBLE,
    VISIBLE,
    VISIBLE_ASTRAL,
    ann,
    blank,
    refused_at,
)

from memory_bank.errors import field_errors
from memory_bank.generated.catalog import CAPABILITIES
from memory_bank.generated.models import MemoryCreate
from memory_bank.generated.spec import SPEC
from memory_bank.store import MemoryStore
from memory_bank.store.database import create_schema
from memory_bank.store.tables import MemoryRow

SCHEMAS = SPEC["components"]["schemas"]
TOOLS = {c["name"]: jsonschema.Draft202012Validator(c["inputSchema"]) for c in CAPABILITIES}
#: Tags that fit in 64 characters and show nothing.
INVISIBLE_TAGS = [t for t in INVISIBLE if len(t) <= 64]
#: Visible tags, also with blank characters inside or around them (a family emoji's ZWJ).
VISIBLE_TAGS = [*VISIBLE_ASTRAL, "editor", "\u200beditor", "👨\u200d👩\u200d👧", "a b", "ü"]


def test_tag_and_content_share_one_pattern_and_one_message() -> None:
    assert SCHEMAS["Tag"]["pattern"] == SCHEMAS["Content"]["pattern"]
    assert SCHEMAS["Tag"]["x-pattern-message"] == SCHEMAS["Content"]["x-pattern-message"] == VISIBLE


@examples(max_examples=300, deadline=None)
@given(st.text(st.characters(categories=["Cc", "Cf", "Zs", "Zl", "Zp"]) | st.sampled_from("\u3164\u2800\ufe0f\U000e0100"), min_size=1, max_size=64))
def test_a_tag_of_only_invisible_characters_is_refused_by_the_model_and_every_tool_schema(tag: str) -> None:
    with pytest.raises(ValidationError) as refused:
        MemoryCreate.model_validate({"content": "a fact", "tags": ["fine", tag]})
    assert [(e.field, e.rule, e.message) for e in field_errors(refused.value.errors())] == [("/tags/1", "pattern", VISIBLE)]
    assert not TOOLS["postMemory"].is_valid({"body": {"content": "a fact", "tags": [tag]}})
    assert not TOOLS["putMemoryKeypath"].is_valid({"path": {"keypath": "a.b"}, "body": {"content": "a fact", "tags": [tag]}})
    assert not TOOLS["getMemorySearch"].is_valid({"query": {"q": "fact", "tags": [tag]}})


@examples(max_examples=300, deadline=None)
@given(st.text(st.characters(codec="utf-8"), min_size=1, max_size=64))
def test_the_model_and_the_tool_schema_agree_on_any_tag(tag: str) -> None:
    try:
        MemoryCreate.model_validate({"content": "a fact", "tags": [tag]})
        accepted = True
    except ValueError:
        accepted = False
    assert accepted == TOOLS["postMemory"].is_valid({"body": {"content": "a fact", "tags": [tag]}}), repr(tag)
    assert accepted == (not all(blank(c) for c in tag)), repr(tag)


@pytest.mark.parametrize("tag", INVISIBLE_TAGS)
def test_an_invisible_tag_is_refused_at_that_tag_on_every_door(ann: TestClient, tag: str) -> None:
    kept = ann.post("/v1/memory", json={"content": "a visible fact", "tags": ["kept"]}).json()
    refused_at(ann.post("/v1/memory", json={"content": "another fact", "tags": ["ok", tag]}), "/body/tags/1")
    refused_at(ann.put("/v1/memory/keypaths/a.b", json={"content": "a setting", "tags": [tag]}), "/body/tags/0")
    refused_at(ann.patch(f"/v1/memory/{kept['id']}", json={"tags": [tag]}), "/body/tags/0")
    refused_at(ann.get("/v1/memory", params={"tags": tag}), "/query/tags/0")
    refused_at(ann.get("/v1/memory/search", params={"q": "fact", "tags": ["kept", tag]}), "/query/tags/1")
    record = {**exported(ann)[0], "id": "B" * 21, "content": "imported fact", "tags": [tag]}
    imported = ann.post("/v1/memory/import", content=ndjson([record]))
    assert imported.status_code == 422 and imported.json()["code"] == "invalid_params", imported.text
    assert [e["rule"] for e in imported.json()["errors"]] == ["pattern"] and VISIBLE in imported.json()["errors"][0]["message"]
    assert [(m["content"], m["tags"]) for m in ann.get("/v1/memory", params={"include_superseded": True}).json()["items"]] == [("a visible fact", ["kept"])]


@pytest.mark.parametrize("tag", VISIBLE_TAGS)
def test_a_visible_tag_is_kept_and_filters(ann: TestClient, tag: str) -> None:
    created = ann.post("/v1/memory", json={"content": "a tagged fact", "tags": [tag]})
    assert created.status_code == 201 and created.json()["tags"] == [tag], created.text
    assert [m["id"] for m in ann.get("/v1/memory", params={"tags": tag}).json()["items"]] == [created.json()["id"]]


def test_mcp_refuses_an_invisible_tag_as_rest_does(app: FastAPI, make_token: MakeToken) -> None:
    with TestClient(app, base_url="http://127.0.0.1") as client:
        result = call_tool(client, make_token("acme", "ann"), "execute_capability", {"name": "postMemory", "body": {"content": "a fact", "tags": ["\u200b"]}})
    assert result["isError"]
    problem = json.loads(result["content"][0]["text"])
    assert problem["code"] == "invalid_params" and [e["field"] for e in problem["errors"]] == ["/body/tags/0"]
    assert problem["errors"][0]["message"].startswith(VISIBLE)


def test_a_tag_stored_before_the_rule_stays_readable(store: MemoryStore, make_principal: Any, ann: TestClient) -> None:
    """Written past the spec (revision 0007 drops such tags from the rows of before): still read."""
    row, _ = store.create(make_principal("acme", "ann", DEFAULT_AGENT), {"content": "saved before the rule", "tags": ["\u200b"]})
    got = ann.get(f"/v1/memory/{row.id}")
    assert got.status_code == 200 and got.json()["tags"] == ["\u200b"], got.text
    assert [r["id"] for r in ann.get("/v1/memory/search", params={"q": "saved rule"}).json()["results"]] == [row.id]


def test_the_upgrade_drops_tags_with_nothing_visible_so_an_export_imports_again(
    engine: Engine, store: MemoryStore, make_principal: Any, make_client: MakeClient
) -> None:
    """Rows of before the rule, every version and a deleted one, lose exactly their blank tags at
    revision 0007; their search text is written anew, their vector kept; their export imports
    into another owner."""
    ann, tags = make_principal("acme", "ann", DEFAULT_AGENT), ["\u200b", "kept", "\x00\x00", "\u3000\ufe0f", "b", "\u200bseen"]
    first, _ = store.create(ann, {"content": "a fact from before", "tags": tags})
    second = store.patch(ann, first.id, {"content": "the fact from before, corrected"})
    gone, _ = store.create(ann, {"content": "a forgotten one", "tags": ["\u200b"]})
    store.delete(ann, gone.id)
    with engine.begin() as connection:  # a vector, as the semantic extra stores one: kept
        connection.execute(sa.update(MemoryRow).values(embedding=b"\x00\x00\x80\x3f"))
    rerun(engine, "0007", before="0006")
    create_schema(engine)  # the start-up backfill
    with engine.connect() as connection:
        rows = connection.execute(
            sa.select(MemoryRow.pk, MemoryRow.tags, MemoryRow.search_text, MemoryRow.embedding).order_by(MemoryRow.pk)
        ).all()
    assert [row.tags for row in rows] == [["kept", "b", "\u200bseen"], ["kept", "b", "\u200bseen"], []]
    assert all(row.search_text for row in rows) and {row.embedding for row in rows} == {b"\x00\x00\x80\x3f"}
    owner = make_client("acme", "ann")
    assert [r["id"] for r in owner.get("/v1/memory/search", params={"q": "corrected"}).json()["results"]] == [second.id]
    records = exported(owner)
    assert len(records) == 3
    imported = make_client("acme", "bob").post("/v1/memory/import", content=ndjson(records))
    assert imported.status_code == 200 and imported.json()["imported"] == 3, imported.text


def test_a_tag_with_a_nul_inside_is_found_exactly(ann: TestClient) -> None:
    """SQLite's JSON functions end a string at a NUL: "a\\x00b" was found by ``?tags=a`` and not
    by itself; matched as JSON text instead, "," was found in ["a,", ",b"]. Both backends compare
    the whole tag."""
    ids = {}
    for tags in (["a\x00b", "plain"], ["\x00lead"], ["a"], ["a\\u0000b"], ["a,", ",b", "z\x00"], ["k,", "kilo", "\\u0000"], [","]):
        created = ann.post("/v1/memory", json={"content": f"tagged {len(ids)}", "tags": tags})
        assert created.status_code == 201, created.text
        ids[tags[0]] = created.json()["id"]
    for tag, wanted in (("a\x00b", ["a\x00b"]), ("\x00lead", ["\x00lead"]), ("a", ["a"]), ("plain", ["a\x00b"]), ("a\\u0000b", ["a\\u0000b"]), ("b", []), (",", [","]), ("kilo", ["k,"]), (",b", ["a,"])):
        found = {m["id"] for m in ann.get("/v1/memory", params={"tags": tag}).json()["items"]}
        assert found == {ids[w] for w in wanted}, tag
        searched = {r["id"] for r in ann.get("/v1/memory/search", params={"q": "tagged", "tags": tag}).json()["results"]}
        assert searched == {ids[w] for w in wanted}, tag
