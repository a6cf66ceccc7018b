"""The search answer: ``{"results": [...]}``, each hit a whole memory with its score beside its fields.

The same document over REST and over MCP (meta and direct tools), and it is what the
spec says: the REST schema, and the outputSchema the generator derives from it.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from memory_bank.generated.catalog import CAPABILITIES
from memory_bank.generated.spec import SPEC
from memory_bank.settings import McpToolsMode
from support.mcp_live import live_server

SCHEMAS = SPEC["components"]["schemas"]
SEARCH_200 = SPEC["paths"]["/v1/memory/search"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
CONTENT = "The user prefers vim as their editor"


def spec_validator(schema: dict[str, Any]) -> Draft202012Validator:
    """``schema`` as the spec writes it, its ``#/components/...`` refs resolved in the spec."""
    return Draft202012Validator({**schema, "components": SPEC["components"]})


def searched(client: TestClient, **params: Any) -> dict[str, Any]:
    response = client.get("/v1/memory/search", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    spec_validator(SEARCH_200).validate(body)
    return body


_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=12)
_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=120).filter(str.strip)
MEMORIES = st.fixed_dictionaries(
    {"content": _TEXT},
    optional={
        "tags": st.lists(_WORD, max_size=4, unique=True),
        "contexts": st.lists(st.fixed_dictionaries({"snippet": _TEXT}, optional={"origin": _WORD}), max_size=3),
        "scope": st.sampled_from(["user", "org"]),
        "source": _WORD,
        "category": st.sampled_from(SCHEMAS["Category"]["enum"]),
        "confidence": st.floats(0, 1),
        "project_id": _WORD,
        "keypath": st.lists(_WORD, min_size=1, max_size=3).map(".".join),
    },
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=MEMORIES)
def test_a_hit_is_the_memory_as_read_with_its_score_beside_it(make_client: Any, body: dict[str, Any]) -> None:
    ann = make_client("acme", "ann")
    marker = f"probe-{uuid.uuid4().hex}"
    body = {**body, "tags": [*body.get("tags", []), marker]}
    if "keypath" in body:
        body["keypath"] = f"{marker}.{body['keypath']}"  # a keypath of its own: no earlier example supersedes
    saved = ann.post("/v1/memory", json=body, headers={"Idempotency-Key": marker})  # a repeated content is new too
    assert saved.status_code == 201, saved.text

    (hit,) = searched(ann, tags=[marker])["results"]
    assert 0 <= hit.pop("score") <= 1
    assert hit == ann.get(f"/v1/memory/{saved.json()['id']}").json()


def test_a_ranked_hit_keeps_every_field_and_zero_hits_is_an_empty_list(make_client: Any) -> None:
    ann = make_client("acme", "ann")
    saved = ann.post("/v1/memory", json={"content": CONTENT, "tags": ["editor"], "contexts": [{"snippet": "I use vim"}]}).json()
    ann.post("/v1/memory", json={"content": "The user lives in Lisbon"})

    first, *_ = searched(ann, q="which editor does the user prefer")["results"]
    assert first == {**saved, "score": first["score"]} and 0 < first["score"] <= 1
    assert searched(ann, q="kubernetes") == {"results": []}
    assert searched(ann, q="?!") == {"results": []}
    assert make_client("other", "eve").get("/v1/memory/search", params={"q": "editor"}).json() == {"results": []}


def test_the_spec_gives_a_hit_exactly_the_memory_fields_and_the_score() -> None:
    hit, memory = SCHEMAS["SearchHit"], SCHEMAS["Memory"]
    assert hit["properties"] == {**memory["properties"], "score": hit["properties"]["score"]}
    assert hit["required"] == [*memory["required"], "score"]
    assert hit["additionalProperties"] is False and SEARCH_200 == {"$ref": "#/components/schemas/SearchResults"}


@pytest.mark.parametrize("mode", [McpToolsMode.direct, McpToolsMode.meta])
async def test_mcp_answers_the_rest_document_and_its_output_schema_holds(tmp_path: Path, mode: McpToolsMode) -> None:
    with live_server(tmp_path, mode) as server:
        token = server.token()
        rest = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"})
        saved = rest.post("/v1/memory", json={"content": CONTENT, "tags": ["editor"]}).json()
        async with server.client(token) as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            answers = {}
            for q in ("which editor does the user prefer", "kubernetes"):
                query = {"q": q}
                if mode is McpToolsMode.direct:
                    result = await client.call_tool("getMemorySearch", {"query": query})
                else:
                    result = await client.call_tool("execute_capability", {"name": "getMemorySearch", "query": query})
                assert not result.is_error, result.structured_content
                answers[q] = (result.structured_content, rest.get("/v1/memory/search", params=query).json())
        rest.close()

    catalog = next(c for c in CAPABILITIES if c["name"] == "getMemorySearch")["outputSchema"]
    if mode is McpToolsMode.direct:
        assert listed["getMemorySearch"].output_schema == catalog
    for over_mcp, over_rest in answers.values():
        assert over_mcp == over_rest
        Draft202012Validator(catalog).validate(over_mcp)
    hits = answers["which editor does the user prefer"][0]["results"]
    assert [h["id"] for h in hits] == [saved["id"]] and hits[0]["tags"] == ["editor"]
    assert answers["kubernetes"][0] == {"results": []}
