"""Media types and content codings: a body the service cannot read is refused with a code of its own.

A 406 or 415 is not an argument that fails a schema, so neither is ``invalid_params``;
and a compressed body is refused where it would have reached the JSON parser as bytes.
REST and ``/mcp`` answer alike, on SQLite and MariaDB.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from memory_bank.api.media import accepts
from memory_bank.errors import ErrorCode
from support.clients import MakeToken

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
MCP_ACCEPT = "application/json, text/event-stream"
MEMORY = json.dumps({"content": "the deploy key lives in the vault"}).encode()
LINES = json.dumps({"content": "an imported fact"}).encode() + b"\n"
#: A gzip bomb in miniature: 64 KiB on the wire, 64 MiB once inflated.
BOMB = gzip.compress(b" " * (64 * 1024 * 1024), compresslevel=9)


@pytest.fixture
def local(app: FastAPI) -> Iterator[TestClient]:
    """The app under a loopback name, which ``/mcp`` serves in development."""
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        yield client


@pytest.fixture
def bearer(make_token: MakeToken) -> dict[str, str]:
    return {"Authorization": f"Bearer {make_token('acme', 'ann', ['memory:read', 'memory:write', 'memory:admin'])}"}


def problem(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    document: dict[str, Any] = response.json()
    assert document["status"] == status and document["code"] == code
    return document


def test_the_codes_are_in_the_enum_and_both_specs() -> None:
    from memory_bank.generated.spec import SPEC

    codes = SPEC["components"]["schemas"]["Problem"]["properties"]["code"]["enum"]
    assert {"not_acceptable", "unsupported_media_type"} <= set(codes) == {c.value for c in ErrorCode}


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", ""])
def test_mcp_answers_a_body_that_is_not_json_415_unsupported_media_type(local: TestClient, bearer, content_type) -> None:
    headers = {**bearer, "Accept": MCP_ACCEPT, "Content-Type": content_type}
    document = problem(local.post("/mcp", content=json.dumps(PING).encode(), headers=headers), 415, "unsupported_media_type")
    assert "application/json" in document["detail"]


CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search_capabilities", "arguments": {"query": "save"}}}


@pytest.mark.parametrize("content_type", ["APPLICATION/JSON", "Application/Json; charset=UTF-8", "application/json ; charset=utf-8"])
@pytest.mark.parametrize("message", [PING, CALL], ids=["to-the-sdk", "answered-here"])
def test_mcp_reads_a_json_media_type_in_any_case_whoever_answers(local: TestClient, bearer, content_type, message) -> None:
    """A media type is case-insensitive (RFC 9110 8.3.1), and the check here says so; the SDK's own
    check did not, so a ping or tools/list in upper case got its JSON-RPC 415 where a tool call
    (answered here) got 200."""
    headers = {**bearer, "Accept": MCP_ACCEPT, "Content-Type": content_type}
    answer = local.post("/mcp", content=json.dumps(message).encode(), headers=headers)
    assert answer.status_code == 200 and "result" in answer.json(), answer.text


def test_mcp_answers_a_client_that_takes_no_json_406_not_acceptable(local: TestClient, bearer) -> None:
    document = problem(local.post("/mcp", json=PING, headers={**bearer, "Accept": "text/html"}), 406, "not_acceptable")
    assert "application/json" in document["detail"]


ENCODED = [("gzip", gzip.compress), ("deflate", zlib.compress), ("br", lambda body: body), ("GZIP, identity", gzip.compress)]


@pytest.mark.parametrize(("coding", "encode"), ENCODED)
def test_a_rest_body_in_a_content_coding_is_415_naming_it(local: TestClient, bearer, coding, encode) -> None:
    headers = {**bearer, "Content-Type": "application/json", "Content-Encoding": coding}
    for path, body in (("/v1/memory", MEMORY), ("/v1/memory/import", LINES)):
        response = local.post(path, content=encode(body), headers=headers)
        document = problem(response, 415, "unsupported_media_type")
        assert coding.split(",")[0].strip().lower() in document["detail"]
        assert response.headers["accept-encoding"] == "identity"
    assert local.get("/v1/memory", headers=bearer).json()["items"] == []  # nothing was written


@pytest.mark.parametrize(("coding", "encode"), ENCODED)
def test_an_mcp_body_in_a_content_coding_is_415_naming_it(local: TestClient, bearer, coding, encode) -> None:
    headers = {**bearer, "Accept": MCP_ACCEPT, "Content-Type": "application/json", "Content-Encoding": coding}
    response = local.post("/mcp", content=encode(json.dumps(PING).encode()), headers=headers)
    assert coding.split(",")[0].strip().lower() in problem(response, 415, "unsupported_media_type")["detail"]
    assert response.headers["accept-encoding"] == "identity"


def test_a_bomb_is_refused_unread_on_both_doors_and_only_after_the_token(local: TestClient, bearer) -> None:
    gz = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    problem(local.post("/v1/memory", content=BOMB, headers={**bearer, **gz}), 415, "unsupported_media_type")
    problem(local.post("/mcp", content=BOMB, headers={**bearer, **gz, "Accept": MCP_ACCEPT}), 415, "unsupported_media_type")
    problem(local.post("/v1/memory", content=BOMB, headers=gz), 401, "unauthorized")
    problem(local.post("/mcp", content=BOMB, headers={**gz, "Accept": MCP_ACCEPT}), 401, "unauthorized")


def test_a_coding_that_is_not_a_token_is_not_echoed(local: TestClient, bearer) -> None:
    headers = {**bearer, "Content-Type": "application/json", "Content-Encoding": "<script>" + "x" * 200}
    document = problem(local.post("/v1/memory", content=MEMORY, headers=headers), 415, "unsupported_media_type")
    assert "<script>" not in document["detail"] and "xxxx" not in document["detail"]


def test_identity_is_the_body_as_sent(local: TestClient, bearer) -> None:
    headers = {**bearer, "Content-Type": "application/json", "Content-Encoding": "identity"}
    assert local.post("/v1/memory", content=MEMORY, headers=headers).status_code == 201
    mcp = local.post("/mcp", content=json.dumps(PING).encode(), headers={**headers, "Accept": MCP_ACCEPT})
    assert mcp.status_code == 200 and mcp.json()["result"] == {}


def test_every_operation_with_a_body_declares_the_415() -> None:
    """A client generated from the spec knows the refusal above can answer any body it sends."""
    from memory_bank.generated.spec import SPEC

    with_body = [
        (path, method, operation["responses"])
        for path, item in SPEC["paths"].items()
        for method, operation in item.items()
        if isinstance(operation, dict) and "requestBody" in operation
    ]
    assert len(with_body) >= 7
    assert [(p, m) for p, m, responses in with_body if "415" not in responses] == []


@pytest.mark.parametrize(
    "accept",
    [
        "application/json;q=0, text/event-stream",
        "application/json; q=0.000, text/event-stream",
        "text/event-stream, application/*;q=0",
        "*/*;q=0",
        "application/json;Q=0",
        "text/event-stream, application/json;q=0, */*",
        "application/json;q=0.0000, text/event-stream",
        "application/json;q=-1, text/event-stream",
        "application/json;q=00, */*",
    ],
)
def test_mcp_takes_q_0_as_not_acceptable(local: TestClient, bearer, accept: str) -> None:
    """A media range with q=0 is "not acceptable" (RFC 9110 §12.4.2), however else it is written;
    the most specific range decides (§12.5.1), so ``*/*`` does not undo ``application/json;q=0``.
    A weight past the grammar that is still a number (``0.0000``, ``-1``) is read clamped to 0..1,
    as werkzeug reads one, rather than as no weight at all (1)."""
    headers = {**bearer, "Accept": accept}
    for message in (PING, CALL):
        problem(local.post("/mcp", json=message, headers=headers), 406, "not_acceptable")


@pytest.mark.parametrize(
    "accept",
    [
        MCP_ACCEPT,
        "*/*",
        "application/*",
        "application/json",
        "application/json;q=0.1",
        "application/json;q=1.0, text/event-stream;q=0",
        "application/json;q=0.5, text/event-stream;q=0.9",
        "application/*;q=0, application/json",
        "*/*;q=0, application/json;q=0.001",
        "APPLICATION/JSON",
        "text/html, application/json ; q=0.8",
        "application/json;q=1.5",
        "application/json;q=abc",
        "application/json;q=nan, */*;q=0",
        "application/json;q=0.00001",
    ],
)
def test_mcp_still_answers_any_acceptance_of_json(local: TestClient, bearer, accept: str) -> None:
    headers = {**bearer, "Accept": accept}
    for message in (PING, CALL):
        answer = local.post("/mcp", json=message, headers=headers)
        assert answer.status_code == 200 and "result" in answer.json(), (accept, answer.text)


def test_mcp_still_wants_an_accept_header(local: TestClient, bearer) -> None:
    """MCP's streamable HTTP asks every client to send one listing application/json; the SDKs do."""
    request = local.build_request("POST", "/mcp", json=PING, headers=bearer)
    del request.headers["accept"]
    problem(local.send(request), 406, "not_acceptable")


#: Every REST operation with a body, a body it takes, and the media type its spec declares.
REST_BODIES = [
    ("POST", "/v1/memory", MEMORY, "application/json"),
    ("PUT", "/v1/memory/keypaths/a.b", MEMORY, "application/json"),
    ("POST", "/v1/memory/import", LINES, "application/x-ndjson"),
]


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml", "json", "application/jsonx", ";", "\u00e9/json", "application/+json", "application/ +json", "application/vnd api+json", "*/*"],
)
@pytest.mark.parametrize(("method", "path", "body", "declared"), REST_BODIES)
def test_rest_refuses_a_body_in_a_media_type_its_spec_does_not_declare(local: TestClient, bearer, content_type, method, path, body, declared) -> None:
    response = local.request(method, path, content=body, headers={**bearer, "Content-Type": content_type.encode()})
    document = problem(response, 415, "unsupported_media_type")
    assert declared in document["detail"] and response.headers["accept"] == declared
    assert local.get("/v1/memory", headers=bearer).json()["items"] == []


@pytest.mark.parametrize(
    "content_type",
    ["application/json", "APPLICATION/JSON", "application/json; charset=utf-8", "Application/Json ; Charset=UTF-8", "application/problem+json", "application/vnd.memory+json"],
)
def test_rest_reads_json_in_any_case_with_parameters_and_as_a_json_suffix(local: TestClient, bearer, content_type) -> None:
    answer = local.post("/v1/memory", content=MEMORY, headers={**bearer, "Content-Type": content_type})
    assert answer.status_code == 201, answer.text


def an_export(local: TestClient, bearer: dict[str, str]) -> bytes:
    """JSON lines an import takes: the export of one memory (imported again, it is skipped)."""
    assert local.post("/v1/memory", content=MEMORY, headers=bearer).status_code == 201
    return local.get("/v1/memory/export", headers=bearer).content


@pytest.mark.parametrize("content_type", ["application/x-ndjson", "APPLICATION/X-NDJSON; charset=utf-8"])
def test_the_import_reads_exactly_what_its_spec_declares(local: TestClient, bearer, content_type) -> None:
    lines = an_export(local, bearer)
    assert local.post("/v1/memory/import", content=lines, headers={**bearer, "Content-Type": content_type}).status_code == 200
    problem(local.post("/v1/memory/import", content=LINES, headers={**bearer, "Content-Type": "application/json"}), 415, "unsupported_media_type")


@pytest.mark.parametrize(("method", "path", "body", "declared"), REST_BODIES)
def test_a_body_without_a_content_type_is_read_as_the_declared_type(local: TestClient, bearer, method, path, body, declared) -> None:
    """RFC 9110 §8.3 lets the recipient examine a body that names no type; each route takes one type."""
    if declared != "application/json":
        body = an_export(local, bearer)
    request = local.build_request(method, path, content=body, headers=bearer)
    assert "content-type" not in request.headers
    assert local.send(request).status_code in (200, 201)


def test_two_content_types_are_not_one_media_type(local: TestClient, bearer) -> None:
    headers = [*bearer.items(), ("Content-Type", "application/json"), ("Content-Type", "application/json")]
    problem(local.post("/v1/memory", content=MEMORY, headers=headers), 415, "unsupported_media_type")


def test_the_415_comes_after_the_token(local: TestClient) -> None:
    problem(local.post("/v1/memory", content=MEMORY, headers={"Content-Type": "text/plain"}), 401, "unauthorized")



weights = st.integers(0, 1000).map(lambda m: f"{m // 1000}.{m % 1000:03d}" if m < 1000 else "1.000")
others = st.lists(st.sampled_from(["text/html", "text/event-stream", "image/*", "text/*;q=0", "application/xml"]), max_size=3)


@given(weight=weights, wildcards=st.lists(st.sampled_from(["*/*", "*/*;q=0", "application/*", "application/*;q=0"]), max_size=2), rest=others)
def test_the_most_specific_range_decides(weight: str, wildcards: list[str], rest: list[str]) -> None:
    """``application/json;q=w`` takes JSON exactly when w > 0, whatever wildcard or other type stands beside it."""
    ranges = [f"application/json;q={weight}", *wildcards, *rest]
    assert accepts(", ".join(ranges), "application/json") == (float(weight) > 0)
    assert accepts(", ".join(reversed(ranges)), "application/json") == (float(weight) > 0)
