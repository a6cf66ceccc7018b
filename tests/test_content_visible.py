"""Content must hold a character someone can see; a NUL among visible text is kept byte for byte.

Blank content (only whitespace) was refused, but 1,000 U+0000 were a memory, as was a
zero-width space alone: nothing to read, search or show. The spec's ``Content`` pattern
now asks for one character that is not a control, a format character, whitespace or a
blank-rendering filler, spelled as escapes every regex engine reads alike, so REST, the
MCP tool schema and import refuse the same contents with 422 ``invalid_params`` at the
content field. A NUL between visible characters is legitimate text (a pasted binary
excerpt) and round-trips exactly through save, get, search, export and import on SQLite
and MariaDB, so it stays accepted.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

import jsonschema
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters
from pydantic import ValidationError

from memory_bank.errors import field_errors
from memory_bank.generated.catalog import CAPABILITIES
from memory_bank.generated.models import MemoryCreate
from memory_bank.generated.spec import SPEC
from memory_bank.owner_ids import _INVISIBLE
from support.clients import MakeClient, MakeToken
from support.mcp_live import MEMORY_BANK, call_tool, tool_problem
from support.transfer import exported, ndjson

PATTERN = SPEC["components"]["schemas"]["Content"]["pattern"]
POST_MEMORY = jsonschema.Draft202012Validator(next(c for c in CAPABILITIES if c["name"] == "postMemory")["inputSchema"])
#: Contents with nothing to see: controls, format characters, separators, fillers.
INVISIBLE = [
    "\x00" * 1000,
    "\x00",
    "\x00 \t\n",
    "\x7f\x85\x9f",
    "\u200b",
    "\ufeff\u200b\u200d",
    "\u00ad",
    "\u2028\u2029",
    "\u202e\u2066",
    "\u3164\u115f",
    "\u2800",
    "\ufe0f",
    "\U000e0001",
    "\U000e0041\U000e0042\U000e007f",
    "\U0001d173\U0001bca0\U00013430\U000110bd",
    "\U000e0100",
    "\u200b\U000e0020 \U000e01ef",
    "\u2065\ufff0\ufff8",
    "\U000e0000\U000e0002\U000e0080\U000e01f0\U000e0fff",
]
#: Visible characters beyond the BMP: an emoji, a CJK Extension B ideograph, a flag
#: written with tag characters, a private-use icon (as icon fonts place them).
VISIBLE_ASTRAL = ["\U0001f600", "\U00020000", "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f", "\U000f0001"]
VISIBLE = "must contain at least one visible character"
#: A NUL (or another control) among visible text.
#: Code points Unicode leaves unassigned but reserves as Default_Ignorable_Code_Point
#: (DerivedCoreProperties.txt; the Standard, section 5.21): whatever is ever put there,
#: a renderer that does not know it shows nothing, so they are blank now, not "a newer emoji".
RESERVED_IGNORABLE = [(0x2065, 0x2065), (0xFFF0, 0xFFF8), (0xE0000, 0xE0000), (0xE0002, 0xE001F), (0xE0080, 0xE00FF), (0xE01F0, 0xE0FFF)]
WITH_NUL = ["before\x00after", "\x00lead", "trail\x00", "alpha\x00\x00beta gamma\x01delta"]


def blank(character: str) -> bool:
    """What the pattern counts as nothing to see, from the Unicode database."""
    return (
        unicodedata.category(character) in ("Cc", "Cf", "Zs", "Zl", "Zp")
        or character.isspace()
        or _INVISIBLE.match(character) is not None
        or reserved_ignorable(character)
    )


def reserved_ignorable(character: str) -> bool:
    return any(low <= ord(character) <= high for low, high in RESERVED_IGNORABLE)


@pytest.fixture
def ann(make_client: MakeClient) -> TestClient:
    return make_client("acme", "ann")


def refused_at(response: Any, field: str) -> None:
    assert response.status_code == 422, response.text
    problem = response.json()
    assert problem["code"] == "invalid_params"
    assert [(e["field"], e["rule"], e["message"]) for e in problem["errors"]] == [(field, "pattern", VISIBLE)], problem
    assert PATTERN not in response.text and VISIBLE in problem["detail"]


def test_the_pattern_refuses_exactly_the_invisible_characters_of_all_unicode() -> None:
    """Every code point alone (bar surrogates): refused by the pattern exactly when it is blank.

    Above the BMP that is the format characters (the tag characters U+E0001 and
    U+E0020-E007F, Egyptian and shorthand format controls, musical beams) and the
    variation selectors supplement. Code points this Python's Unicode database does not
    assign are not compared (a later Unicode made U+13439-1343F format characters), but
    for those Unicode reserves as default ignorable, which are blank in every version.
    """
    pattern = re.compile(PATTERN)
    wrong = [
        f"U+{cp:04X}"
        for cp in range(0x110000)
        if not 0xD800 <= cp <= 0xDFFF
        and (unicodedata.category(chr(cp)) != "Cn" or reserved_ignorable(chr(cp)))
        and (pattern.search(chr(cp)) is None) != blank(chr(cp))
    ]
    assert wrong == []


@examples(max_examples=300, deadline=None)
@given(st.text(st.characters(categories=["Cc", "Cf", "Zs", "Zl", "Zp"]) | st.sampled_from("\u3164\u2800\ufe0f\U000e0100\U000e01ef"), min_size=1, max_size=30))
def test_content_of_only_invisible_characters_is_refused_by_the_model_and_the_tool_schema(content: str) -> None:
    with pytest.raises(ValidationError) as refused:
        MemoryCreate.model_validate({"content": content})
    assert [(e.field, e.rule, e.message) for e in field_errors(refused.value.errors())] == [("/content", "pattern", VISIBLE)]
    assert not POST_MEMORY.is_valid({"body": {"content": content}})


@examples(max_examples=300, deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=10), st.characters(min_codepoint=0x10000, categories=["L", "N", "S", "P", "M", "Co"]), st.text(st.characters(codec="utf-8"), max_size=10))
def test_one_visible_astral_character_is_enough(before: str, visible: str, after: str) -> None:
    assert not blank(visible)
    MemoryCreate.model_validate({"content": before + visible + after})
    assert POST_MEMORY.is_valid({"body": {"content": before + visible + after}})


@pytest.mark.parametrize("content", INVISIBLE)
def test_invisible_content_is_refused_at_the_content_field_on_every_write(ann: TestClient, content: str) -> None:
    refused_at(ann.post("/v1/memory", json={"content": content}), "/body/content")
    refused_at(ann.put("/v1/memory/keypaths/a.b", json={"content": content}), "/body/content")
    memory = ann.post("/v1/memory", json={"content": "a visible fact"}).json()
    refused_at(ann.patch(f"/v1/memory/{memory['id']}", json={"content": content}), "/body/content")
    record = {**exported(ann)[0], "id": "B" * 21, "content": content}
    imported = ann.post("/v1/memory/import", content=ndjson([record]))
    assert imported.status_code == 422 and imported.json()["code"] == "invalid_params", imported.text
    assert [e["rule"] for e in imported.json()["errors"]] == ["pattern"], imported.text
    assert VISIBLE in imported.json()["errors"][0]["message"] and PATTERN not in imported.text
    assert [m["content"] for m in ann.get("/v1/memory").json()["items"]] == ["a visible fact"]


@pytest.mark.parametrize("content", VISIBLE_ASTRAL)
def test_visible_astral_content_is_kept(ann: TestClient, content: str) -> None:
    created = ann.post("/v1/memory", json={"content": content})
    assert created.status_code == 201 and created.json()["content"] == content, created.text


@pytest.mark.parametrize("content", [*INVISIBLE[:4], "\U000e0041\U000e0042\U000e007f", INVISIBLE[-1]])
def test_mcp_refuses_it_as_rest_does(app: FastAPI, make_token: MakeToken, content: str) -> None:
    assert not POST_MEMORY.is_valid({"body": {"content": content}})
    with TestClient(app, base_url="http://127.0.0.1") as client:
        result = call_tool(client, make_token("acme", "ann"), "execute_capability", {"name": "postMemory", "body": {"content": content}})
    assert result["isError"]
    problem = json.loads(result["content"][0]["text"])
    assert problem["code"] == "invalid_params" and [e["field"] for e in problem["errors"]] == ["/body/content"]
    assert problem["errors"][0]["message"].startswith(VISIBLE) and PATTERN not in json.dumps(problem)


@examples(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(st.characters(codec="utf-8"), min_size=1, max_size=20))
def test_the_model_and_the_tool_schema_agree_on_any_content(content: str) -> None:
    """One rule at both doors: the REST model accepts a content exactly when the MCP schema does."""
    try:
        MemoryCreate.model_validate({"content": content})
        accepted = True
    except ValueError:
        accepted = False
    assert accepted == POST_MEMORY.is_valid({"body": {"content": content}}), repr(content)


@pytest.mark.parametrize("content", WITH_NUL)
def test_a_nul_among_visible_text_round_trips_exactly(ann: TestClient, make_client: MakeClient, content: str) -> None:
    created = ann.post("/v1/memory", json={"content": content, "tags": ["nul"]})
    assert created.status_code == 201 and created.json()["content"] == content
    memory_id = created.json()["id"]
    assert ann.get(f"/v1/memory/{memory_id}").json()["content"] == content
    for word in re.sub(r"[^a-z]", " ", content).split():  # a NUL separates words as a space does
        found = ann.get("/v1/memory/search", params={"q": word}).json()["results"]
        assert [(r["id"], r["content"]) for r in found] == [(memory_id, content)], word
    records = exported(ann)
    assert [r["content"] for r in records] == [content]
    other = make_client("acme", "bob")
    assert other.post("/v1/memory/import", content=ndjson(records)).json()["imported"] == 1
    assert [m["content"] for m in other.get("/v1/memory").json()["items"]] == [content]


async def test_stdio_refuses_invisible_content_and_keeps_a_nul_as_http_does(stdio_env: dict[str, str]) -> None:
    """The stdio transport dispatches into the same routes: the same refusal, the same exact text."""
    server = StdioServerParameters(command=MEMORY_BANK, args=["mcp"], env=stdio_env)
    async with Client(server) as client:
        refused = await client.call_tool("execute_capability", {"name": "postMemory", "body": {"content": "\x00" * 1000}})
        saved = await client.call_tool("execute_capability", {"name": "postMemory", "body": {"content": WITH_NUL[0]}})
        listed = await client.call_tool("execute_capability", {"name": "listMemories", "query": {"include_superseded": True, "limit": 5}})
    assert refused.is_error
    problem = tool_problem(refused)
    assert problem["code"] == "invalid_params" and [e["field"] for e in problem["errors"]] == ["/body/content"]
    assert problem["errors"][0]["message"].startswith(VISIBLE)
    assert not saved.is_error and saved.structured_content["content"] == WITH_NUL[0]
    assert not listed.is_error and [m["content"] for m in listed.structured_content["items"]] == [WITH_NUL[0]]
