"""The HTTP edge of ``/mcp`` on a real uvicorn server: methods, media types, size, envelope, metrics.

Refusals before a JSON-RPC message is read are problem+json like the REST API's;
a body that is not one JSON-RPC message gets a short JSON-RPC error that echoes
nothing the client sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from memory_bank.mcp.envelope import BAD_ID, BATCH, NOT_A_MESSAGE, NOT_JSON, PROTOCOL_VERSIONS, UNSUPPORTED_VERSION
from memory_bank.mcp.http import MAX_BODY_BYTES
from support.mcp_live import LiveServer, live_server

ACCEPT = "application/json, text/event-stream"
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
#: Properties over a live server: enough examples to find a counterexample, no per-example deadline.
LIVE = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(tmp_path_factory.mktemp("mcp-transport")) as live:
        yield live


@pytest.fixture(scope="module")
def http(server: LiveServer) -> Iterator[httpx.Client]:
    """A client holding a read/write token; a short timeout, so a response that never ends fails."""
    headers = {"Authorization": f"Bearer {server.token()}", "Accept": ACCEPT}
    with httpx.Client(base_url=server.url, headers=headers, timeout=5) as client:
        yield client


def post(http: httpx.Client, body: bytes, content_type: str = "application/json") -> httpx.Response:
    return http.post("/mcp", content=body, headers={"Content-Type": content_type})


def problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    document: dict[str, Any] = response.json()
    assert document["status"] == status and document["code"] == code and document["instance"] == "/mcp"
    return document


def jsonrpc_error(response: httpx.Response, code: int, message: str) -> None:
    """Exactly the fixed error: id null, nothing from the request echoed."""
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    assert len(response.content) < 300


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "PATCH", "OPTIONS"])
@pytest.mark.parametrize("permissions", [["memory:read", "memory:write"], []])
def test_only_post_is_served_and_nothing_stays_open(server: LiveServer, method: str, permissions: list[str]) -> None:
    headers = {"Authorization": f"Bearer {server.token(perms=permissions)}", "Accept": ACCEPT}
    response = httpx.request(method, server.mcp_url, headers=headers, timeout=5)
    problem(response, 405, "method_not_allowed")
    assert response.headers["allow"] == "POST"


def test_a_get_without_a_token_is_405_too(server: LiveServer) -> None:
    response = httpx.get(server.mcp_url, headers={"Accept": "text/event-stream"}, timeout=5)
    assert problem(response, 405, "method_not_allowed") and response.headers["allow"] == "POST"


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/jsonl", ""])
def test_a_body_that_is_not_json_by_content_type_is_415(http: httpx.Client, content_type: str) -> None:
    problem(post(http, json.dumps(PING).encode(), content_type), 415, "unsupported_media_type")


def test_json_with_a_charset_is_json(http: httpx.Client) -> None:
    response = post(http, json.dumps(PING).encode(), "application/json; charset=utf-8")
    assert response.status_code == 200 and response.json()["result"] == {}


def test_a_client_that_takes_no_json_is_406(http: httpx.Client) -> None:
    response = http.post("/mcp", json=PING, headers={"Accept": "text/html"})
    problem(response, 406, "not_acceptable")


def test_a_body_over_the_limit_is_413_whether_declared_or_streamed(http: httpx.Client) -> None:
    too_big = b" " * (MAX_BODY_BYTES + 1)
    problem(post(http, too_big), 413, "payload_too_large")

    def chunks() -> Iterator[bytes]:  # no Content-Length: refused by the running count
        for _ in range(MAX_BODY_BYTES // 65536 + 1):
            yield b" " * 65536

    streamed = http.post("/mcp", content=chunks(), headers={"Content-Type": "application/json"})
    problem(streamed, 413, "payload_too_large")


def test_the_largest_tool_call_the_catalog_allows_fits(http: httpx.Client) -> None:
    """Every bound of postMemory filled with characters JSON escapes as surrogate pairs (12 bytes each)."""
    wide = "\U0001f600"
    memory = {
        "content": wide * 8000,
        "tags": [f"{i:02d}" + wide * 62 for i in range(32)],
        "contexts": [{"snippet": wide * 2000, "origin": wide * 512} for _ in range(16)],
        "source": wide * 256,
        "agent_id": "agent-1",
    }
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "execute_capability", "arguments": {"name": "postMemory", "body": memory}}}
    body = json.dumps(call).encode()  # ensure_ascii: the widest encoding of these characters
    assert 0.5 * MAX_BODY_BYTES < len(body) <= MAX_BODY_BYTES
    result = post(http, body).json()["result"]
    assert result["isError"] is False, result
    assert result["structuredContent"]["content"] == wide * 8000


@LIVE
@given(items=st.lists(json_values, max_size=3))
def test_any_batch_is_one_short_invalid_request(http: httpx.Client, items: list[Any]) -> None:
    jsonrpc_error(post(http, json.dumps(items).encode()), -32600, BATCH)


@LIVE
@given(value=json_values, version=st.none() | json_values.filter(lambda v: v != "2.0"))
def test_a_malformed_envelope_is_a_short_invalid_request(http: httpx.Client, value: Any, version: Any) -> None:
    """Anything that is not an object with ``"jsonrpc": "2.0"``, whatever else it holds."""
    if isinstance(value, list):
        value = {"params": value}
    envelope = dict(value) if isinstance(value, dict) else {"method": value, "id": value}
    envelope.pop("jsonrpc", None)
    if version is not None:
        envelope["jsonrpc"] = version
    jsonrpc_error(post(http, json.dumps(envelope).encode()), -32600, NOT_A_MESSAGE)


@LIVE
@given(
    request_id=json_values.filter(lambda v: not isinstance(v, str) and (isinstance(v, bool) or not isinstance(v, int))),
    method=st.sampled_from(["ping", "tools/list", "tools/call", "notifications/initialized", "no/such/method"]),
)
def test_a_message_whose_id_is_no_string_or_integer_is_an_invalid_request(
    http: httpx.Client, request_id: Any, method: str
) -> None:
    """An object, array, float, null or boolean ``id`` is answered, not taken for a notification (202)."""
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {}}
    jsonrpc_error(post(http, json.dumps(message).encode()), -32600, BAD_ID)


@LIVE
@given(
    version=st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=40).filter(lambda v: v not in PROTOCOL_VERSIONS),
    method=st.sampled_from(["ping", "tools/list", "tools/call", "initialize"]),
)
def test_a_protocol_version_the_server_does_not_speak_is_named_as_such(http: httpx.Client, version: str, method: str) -> None:
    """Answered with the protocol's -32022, the request's id and the revisions there are, in fixed
    words (the header is not echoed); the SDK told such a client that params._meta lacked the
    stateless revision's keys."""
    message = {"jsonrpc": "2.0", "id": "v-1", "method": method, "params": {}}
    response = http.post("/mcp", json=message, headers={"MCP-Protocol-Version": version})
    assert response.status_code == 400 and response.headers["content-type"] == "application/json"
    error = {"code": -32022, "message": UNSUPPORTED_VERSION, "data": {"supported": list(PROTOCOL_VERSIONS)}}
    assert response.json() == {"jsonrpc": "2.0", "id": "v-1", "error": error}


@pytest.mark.parametrize("version", PROTOCOL_VERSIONS)
def test_every_revision_the_sdk_speaks_is_still_served(http: httpx.Client, version: str) -> None:
    response = http.post("/mcp", json=PING, headers={"MCP-Protocol-Version": version})
    assert response.json().get("error", {}).get("code") != -32022, response.text


@pytest.mark.parametrize("request_id", [{"n": 1}, [1], 1.5, 1.0])
def test_the_ids_the_protocol_refuses_are_answered_and_a_notification_still_is_not(http: httpx.Client, request_id: Any) -> None:
    call = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}
    jsonrpc_error(post(http, json.dumps(call).encode()), -32600, BAD_ID)
    notification = post(http, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())
    assert (notification.status_code, notification.content) == (202, b"")
    for good in (7, "call-7"):
        assert post(http, json.dumps({**call, "id": good}).encode()).json()["id"] == good


@LIVE
@given(body=st.binary(max_size=64))
def test_a_body_that_is_not_json_is_a_parse_error(http: httpx.Client, body: bytes) -> None:
    assume(not _is_json(body))
    parse_error(post(http, body))


def parse_error(response: httpx.Response) -> str:
    """A -32700 of the fixed shape; its message is ``NOT_JSON`` and the parser's reason, which it returns."""
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    document = response.json()
    assert set(document) == {"jsonrpc", "id", "error"} and document["id"] is None and set(document["error"]) == {"code", "message"}
    assert document["error"]["code"] == -32700
    message: str = document["error"]["message"]
    assert message.startswith(f"{NOT_JSON}: ") and len(message) <= len(NOT_JSON) + 2 + 160  # a plain reason and its position
    return message.removeprefix(f"{NOT_JSON}: ")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "\\ud800"}}', "a string holds half a UTF-16 surrogate pair"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "\\udc00"}}', "a string holds half a UTF-16 surrogate pair"),
        (b"[" * 500 + b"]" * 500, "arrays and objects are nested deeper than the parser reads"),
        (b'{"jsonrpc": "2.0", "id": ' + b"7" * 5000 + b', "method": "ping"}', "a number has more digits than the parser reads"),
    ],
    ids=["lone high surrogate", "lone low surrogate", "nested 500 deep", "5000-digit number"],
)
def test_json_the_parser_will_not_read_says_why_not_that_it_is_not_json(http: httpx.Client, body: bytes, reason: str) -> None:
    """Each body is JSON by the grammar (Python's json reads it), so "not JSON" would be false."""
    json.loads(body, parse_int=str)  # str: Python caps int() at 4,300 digits
    said = parse_error(post(http, body))
    assert said.startswith(reason) and said.endswith(")") and "(at line 1 column " in said, said
    assert "not JSON" not in said


def test_a_fault_deep_in_a_long_body_is_placed_at_its_own_column(http: httpx.Client) -> None:
    """The reason was cut to 120 characters after it was put plainly, which cut the column to
    its first digits and lost the closing parenthesis (a new user's pass)."""
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "' + b"a" * 20_000 + b'\\ud800"}}'
    column = body.index(b"\\ud800") + len(b"\\ud800") + 1
    assert parse_error(post(http, body)).endswith(f"(at line 1 column {column})")


def test_a_body_that_is_not_json_gets_the_parser_s_reason(http: httpx.Client) -> None:
    assert parse_error(post(http, b"{not json")) == "key must be a string at line 1 column 2"
    assert parse_error(post(http, b"")) == "EOF while parsing a value at line 1 column 0"


def _is_json(body: bytes) -> bool:
    try:
        json.loads(body)
    except ValueError:
        return False
    return True


def test_mcp_traffic_is_counted_under_mcp_and_the_tool_name(server: LiveServer, http: httpx.Client) -> None:
    def counts() -> dict[tuple[str, str], float]:
        text = httpx.get(server.url + "/metrics").text
        return {
            (s.labels["operation"], s.labels["code"]): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name == "memory_bank_requests_total"
        }

    before = counts()
    http.post("/mcp", json=PING)
    http.get("/mcp")
    search = {"name": "search_capabilities", "arguments": {"query": "save a memory"}}
    http.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": search})
    unknown = {"name": "no_such_tool", "arguments": {}}
    http.post("/mcp", json={"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": unknown})
    after = counts()

    grew = {key: n - before.get(key, 0) for key, n in after.items() if key[0].startswith("mcp") and n != before.get(key, 0)}
    assert ("unmatched", "200") not in after
    assert grew == {("mcp", "200"): 2, ("mcp", "405"): 1, ("mcp:search_capabilities", "200"): 1}


def test_an_unknown_tool_is_named_back_only_briefly(http: httpx.Client) -> None:
    call = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "x" * 100_000, "arguments": {}}}
    response = http.post("/mcp", json=call)
    error = response.json()["error"]
    assert error["code"] == -32602 and error["message"] == "Unknown tool: " + "x" * 64 + "...; tools/list names the tools this token may call"
    assert len(response.content) < 300
