"""Request bodies: read only after the token is checked, never past what the schema admits."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memory_bank.generated.catalog import CAPABILITIES
from memory_bank_codegen.body_bounds import max_json_bytes
from memory_bank_codegen.loader import load_spec
from memory_bank_codegen.pytypes import TypeNamer
from support.mcp_live import LiveServer, call_tool, live_server
from support.raw_http import RawConnection, connect

SPEC = load_spec(Path(__file__).resolve().parents[1] / "openapi" / "memory.yaml")
ID = "A" * 21
#: Every operation with a JSON body, and the component it takes.
JSON_BODIES = [
    ("POST", "/v1/memory", "MemoryCreate"),
    ("PUT", "/v1/memory/keypaths/a.b", "KeypathValue"),
    ("PATCH", f"/v1/memory/{ID}", "MemoryPatch"),
    ("POST", f"/v1/memory/{ID}/feedback", "FeedbackCreate"),
]
SCHEMAS = {c["name"]: jsonschema.Draft202012Validator(c["inputSchema"]) for c in CAPABILITIES}
POST_MEMORY_SCHEMA = SCHEMAS["postMemory"]
#: One character at its most expensive on the wire: ``\ud83d\ude00`` with ensure_ascii.
EMOJI = "\U0001f600"


def cap_of(component: str) -> int:
    return max_json_bytes({"$ref": f"#/components/schemas/{component}"}, TypeNamer(SPEC))


def largest_memory() -> dict[str, object]:
    """A MemoryCreate with every field at its bound, in the most expensive characters."""
    return {
        "content": EMOJI * 8000,
        "tags": [EMOJI * 64] * 32,
        "contexts": [{"snippet": EMOJI * 2000, "origin": EMOJI * 512}] * 16,
        "scope": "user",
        "source": EMOJI * 256,
        "category": "observation",
        "confidence": 0.30000000000000004,
        "project_id": EMOJI * 128,
        "keypath": "k" * 255,
        "agent_id": "agent-1",
    }


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(tmp_path_factory.mktemp("bodies")) as live:
        yield live


def declare_huge(connection: RawConnection, method: str, path: str, headers: dict[str, str]) -> None:
    """Send only the head of a request that claims a gigabyte of body."""
    connection.send_head(method, path, {**headers, "Content-Length": "1000000000", "Content-Type": "application/json"})


@pytest.mark.parametrize(("method", "path", "component"), JSON_BODIES)
def test_a_huge_declared_body_without_a_token_is_answered_401_unread(server: LiveServer, method, path, component) -> None:
    with connect(server.url, timeout=5) as connection:
        declare_huge(connection, method, path, {})
        answer = connection.read_answer()
    assert answer.status == 401
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["code"] == "unauthorized"


@pytest.mark.parametrize(("method", "path", "component"), JSON_BODIES)
def test_a_huge_declared_body_with_a_token_is_413_unread(server: LiveServer, method, path, component) -> None:
    with connect(server.url, timeout=5) as connection:
        declare_huge(connection, method, path, {"Authorization": f"Bearer {server.token()}"})
        answer = connection.read_answer()
    assert answer.status == 413
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["code"] == "payload_too_large"
    assert str(cap_of(component)) in answer.json()["detail"]


def test_a_chunked_body_is_cut_off_at_the_cap_while_it_streams(server: LiveServer) -> None:
    cap = cap_of("MemoryCreate")
    chunk = b" " * 65536
    with connect(server.url, timeout=10) as connection:
        headers = {"Authorization": f"Bearer {server.token()}", "Transfer-Encoding": "chunked"}
        connection.send_head("POST", "/v1/memory", headers)
        try:
            for _ in range(2 * cap // len(chunk)):  # bounded: twice the cap at most
                connection.send_data(chunk)
        except OSError:
            pass  # the server answered and stopped reading, as it should
        answer = connection.read_answer()
    assert answer.status == 413
    assert answer.json()["code"] == "payload_too_large"


@pytest.mark.parametrize(("method", "path", "component"), JSON_BODIES)
def test_the_token_is_checked_before_the_body_is_parsed(client: TestClient, method, path, component) -> None:
    response = client.request(method, path, content=b'{"not json', headers={"Content-Type": "application/json"})
    assert response.status_code == 401
    assert response.json()["code"] == "unauthorized"


def test_the_largest_valid_body_fits_under_its_cap(client: TestClient, make_token) -> None:
    """The cap is the schema's worst case: a body at every bound, escaped and indented, is saved."""
    body = json.dumps(largest_memory(), ensure_ascii=True, indent=4).encode()
    assert len(body) <= cap_of("MemoryCreate")
    headers = {"Authorization": f"Bearer {make_token('acme', 'ann')}", "Content-Type": "application/json"}
    response = client.post("/v1/memory", content=body, headers=headers)
    assert response.status_code == 201, response.text[:500]


def test_one_byte_over_the_cap_is_413_and_at_the_cap_is_read(client: TestClient, make_token) -> None:
    cap = cap_of("FeedbackCreate")
    headers = {"Authorization": f"Bearer {make_token('acme', 'ann')}", "Content-Type": "application/json"}
    compact = b'{"feedback":"helpful"}'
    at_cap = compact + b" " * (cap - len(compact))
    read = client.post(f"/v1/memory/{ID}/feedback", content=at_cap, headers=headers)
    over = client.post(f"/v1/memory/{ID}/feedback", content=at_cap + b" ", headers=headers)
    assert read.status_code == 404  # read, parsed and valid: the memory does not exist
    assert over.status_code == 413 and over.json()["code"] == "payload_too_large"


@pytest.mark.parametrize("body", [b"", b"   "])
def test_an_empty_body_is_422_at_body(client: TestClient, make_token, body: bytes) -> None:
    headers = {"Authorization": f"Bearer {make_token('acme', 'ann')}", "Content-Type": "application/json"}
    response = client.post("/v1/memory", content=body, headers=headers)
    assert response.status_code == 422
    assert [e["field"] for e in response.json()["errors"]] == ["/body"]


#: JSON values a client may put where a schema wants a number, a string or a list.
JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.floats(min_value=-1, max_value=2, allow_nan=False),
    st.sampled_from(["0.5", "1", "true", "", " ", "\t\n", "\u3000", "\x1c", "a", " fact "]),
    st.text(max_size=6),
)


@pytest.fixture
def writer(make_token) -> dict[str, str]:
    return {"Authorization": f"Bearer {make_token('acme', 'ann')}"}


#: The fields of a MemoryCreate whose types a lax validator would coerce.
TYPED_FIELDS = st.sampled_from(["content", "confidence", "tags", "category", "keypath", "project_id"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=TYPED_FIELDS, value=st.one_of(JSON_SCALARS, st.lists(JSON_SCALARS, max_size=3)))
@example(field="confidence", value="0.5")
@example(field="confidence", value=True)
@example(field="content", value=" ")
def test_rest_accepts_exactly_the_bodies_the_mcp_schema_accepts(
    client: TestClient, writer: dict[str, str], field: str, value: object
) -> None:
    """One validator of record: REST coerces nothing the advertised schema would refuse, and the reverse."""
    body = {"content": "a fact", field: value}
    response = client.post("/v1/memory", json=body, headers=writer)
    accepted = POST_MEMORY_SCHEMA.is_valid({"body": body})
    # Accepted: saved (201), a repeat of an earlier example (200), or the same words saved before
    # with another value of this field (409: not a repeat). Refused: 422, and only then.
    assert response.status_code in ((200, 201, 409) if accepted else (422,)), (body, response.text)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(version=st.one_of(JSON_SCALARS, st.sampled_from([1.0, 2.0, 1.5, 1e3, -1.0])))
@example(version=1.0)
@example(version="1")
def test_an_integer_is_what_json_schema_calls_one(client: TestClient, writer: dict[str, str], version: object) -> None:
    """``1.0`` is an integer to JSON Schema, so REST takes it too; ``"1"`` and ``true`` are not."""
    memory = client.post("/v1/memory", json={"content": "a fact"}, headers=writer).json()
    body = {"content": "changed", "expected_version": version}
    response = client.patch(f"/v1/memory/{memory['id']}", json=body, headers=writer)
    accepted = SCHEMAS["patchMemory"].is_valid({"path": {"memory_id": memory["id"]}, "body": body})
    # Accepted input is applied (200) or meets the version check (409); refused input is 422.
    assert response.status_code in ((200, 409) if accepted else (422,)), (body, response.text)


@pytest.mark.parametrize("content", [" ", "\n\t ", "\u3000\u2003", "\x1c\x1d"])
def test_blank_content_is_refused_at_body_content(client: TestClient, writer: dict[str, str], content: str) -> None:
    created = client.post("/v1/memory", json={"content": content}, headers=writer)
    assert created.status_code == 422
    assert [e["field"] for e in created.json()["errors"]] == ["/body/content"]
    put = client.put("/v1/memory/keypaths/a.b", json={"content": content}, headers=writer)
    assert [e["field"] for e in put.json()["errors"]] == ["/body/content"]


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", f"/v1/memory/{ID}", "GET, HEAD, PATCH, DELETE"),
        ("DELETE", "/v1/memory", "GET, HEAD, POST"),
        ("POST", "/v1/capabilities", "GET, HEAD"),
        ("DELETE", "/v1/memory/keypaths/a.b", "GET, HEAD, PUT"),
    ],
)
def test_a_wrong_method_is_405_with_every_allowed_method(client: TestClient, writer, method, path, allowed) -> None:
    response = client.request(method, path, headers=writer)
    assert response.status_code == 405
    assert response.headers["allow"] == allowed
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "method_not_allowed"


def test_an_unknown_path_is_still_404(client: TestClient, writer) -> None:
    response = client.get("/v1/nothing-here", headers=writer)
    assert response.status_code == 404 and response.json()["code"] == "not_found"
    assert "allow" not in response.headers


@pytest.fixture
def local(app) -> Iterator[TestClient]:
    """A client of the app at an address MCP serves (``mcp.origins``), for both doors."""
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client


def hint_of(message: str) -> str:
    """The "did you mean" that ends a failure's message ("" when it has none)."""
    _, said, hint = message.partition("; did you mean ")
    return said + hint


@pytest.mark.parametrize(
    ("body", "field", "meant"),
    [
        ({"contnet": "x"}, "/body/contnet", "/body/content"),
        ({"content": "x", "tag": ["a"]}, "/body/tag", "/body/tags"),
        ({"content": "x", "Keypath": "a.b"}, "/body/Keypath", "/body/keypath"),
        ({"content": "x", "contexts": [{"snippet": "s"}, {"snippet": "s", "orign": "u"}]}, "/body/contexts/1/orign", "/body/contexts/1/origin"),
    ],
)
def test_a_misspelt_body_field_is_told_the_field_it_misspells_on_rest_as_over_mcp(
    local: TestClient, writer: dict[str, str], body: dict[str, object], field: str, meant: str
) -> None:
    """REST answered only "Extra inputs are not permitted" where execute_capability said "did you mean"."""
    problem = local.post("/v1/memory", json=body, headers=writer).json()
    assert problem["code"] == "invalid_params"
    [unknown] = [e for e in problem["errors"] if e["field"] == field]
    assert unknown["rule"] == "additionalProperties" and unknown["message"].endswith(f"; did you mean {meant}?"), unknown
    assert f"{field}: Extra inputs are not permitted; did you mean {meant}?" in problem["detail"]
    over_mcp = call_tool(local, writer["Authorization"].removeprefix("Bearer "), "execute_capability", {"name": "postMemory", "body": body})
    [told] = [e for e in json.loads(over_mcp["content"][0]["text"])["errors"] if e["field"] == field]
    assert hint_of(told["message"]) == hint_of(unknown["message"])


MEMORY_FIELDS = list(POST_MEMORY_SCHEMA.schema["properties"]["body"]["properties"])


@st.composite
def one_edit_away(draw: st.DrawFn) -> str:
    """A body field's name with one character dropped, doubled, swapped with the next or changed."""
    name = draw(st.sampled_from(MEMORY_FIELDS))
    i = draw(st.integers(0, len(name) - 1))
    letter = draw(st.sampled_from("abcdefghijklmnopqrstuvwxyz_"))
    edits = [
        name[:i] + name[i + 1 :],
        name[:i] + name[i] + name[i:],
        name[:i] + name[i + 1 : i + 2] + name[i] + name[i + 2 :],
        name[:i] + letter + name[i + 1 :],
    ]
    return draw(st.sampled_from([edit for edit in edits if edit not in MEMORY_FIELDS] or ["zzz"]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=one_edit_away(), value=st.one_of(st.text(max_size=3), st.integers(), st.lists(st.text(max_size=3), max_size=2)))
def test_rest_and_mcp_give_an_unknown_body_field_the_same_did_you_mean(
    local: TestClient, writer: dict[str, str], name: str, value: object
) -> None:
    body = {"content": "a fact", name: value}
    rest = local.post("/v1/memory", json=body, headers=writer).json()
    over_mcp = call_tool(local, writer["Authorization"].removeprefix("Bearer "), "execute_capability", {"name": "postMemory", "body": body})
    mcp = json.loads(over_mcp["content"][0]["text"])
    rest_hints, mcp_hints = ({e["field"]: hint_of(e["message"]) for e in p["errors"] if e["rule"] == "additionalProperties"} for p in (rest, mcp))
    assert rest_hints == mcp_hints and f"/body/{name}" in rest_hints


HALF_OF_A_PAIR = "a string holds half a UTF-16 surrogate pair (an escape \\ud800 to \\udfff) without the other half"


@pytest.mark.parametrize("escapes", ["\\ud800", "\\ud800 x", "\\ud800\\u0041", "\\udbff\\ud800", "\\udc00", "\\udfff\\udc00"])
def test_half_a_surrogate_pair_is_named_as_such_on_rest_and_import(client: TestClient, writer: dict[str, str], escapes: str) -> None:
    """The parser calls a lone low surrogate "leading" and a lone high one "unexpected end of hex
    escape"; REST and import say what it is, as MCP's -32700 does (``test_mcp_transport``)."""
    body = f'{{"content": "a {escapes}"}}'.encode()
    rest = client.post("/v1/memory", content=body, headers={**writer, "Content-Type": "application/json"})
    assert rest.status_code == 422 and rest.json()["errors"][0]["message"].startswith(f"Invalid JSON: {HALF_OF_A_PAIR}"), rest.text
    imported = client.post("/v1/memory/import", content=body, headers={**writer, "Content-Type": "application/x-ndjson"})
    assert imported.status_code == 422 and HALF_OF_A_PAIR in imported.json()["errors"][0]["message"], imported.text
