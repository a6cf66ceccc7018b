"""A header the spec declares single-valued, given twice, is 422 naming it (``api.query``).

FastAPI hands a scalar ``Header`` one of the copies, so a write carrying two
``Idempotency-Key`` headers was keyed by one of them while a proxy or a log might have
kept the other. The token is still checked first.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from support.clients import MakeClient

from memory_bank.generated.spec import SPEC
from memory_bank.security.tokens import PERMISSIONS

BODY = b'{"content": "spring garden plan"}'


def test_post_memory_declares_the_header() -> None:
    parameters = SPEC["paths"]["/v1/memory"]["post"]["parameters"]
    assert {"$ref": "#/components/parameters/IdempotencyKey"} in parameters


def test_two_idempotency_keys_are_invalid_params_naming_the_header(make_client: MakeClient) -> None:
    writer = make_client("acme", "ann", PERMISSIONS)
    for keys in (["k1", "k2"], ["k1", "k1"]):  # the same key twice is still two
        answer = writer.post(
            "/v1/memory", content=BODY, headers=[("Content-Type", "application/json"), *[("Idempotency-Key", k) for k in keys]]
        )
        assert answer.status_code == 422, answer.text
        assert answer.headers["content-type"] == "application/problem+json"
        problem = answer.json()
        assert problem["code"] == "invalid_params"
        assert problem["errors"] == [{"field": "/header/Idempotency-Key", "rule": "type", "message": "given 2 times; it takes one value"}]
    # Header names are case-insensitive: two spellings are still two copies.
    answer = writer.post(
        "/v1/memory",
        content=BODY,
        headers=[("Content-Type", "application/json"), ("Idempotency-Key", "k1"), ("idempotency-key", "k2")],
    )
    assert answer.status_code == 422 and answer.json()["errors"][0]["field"] == "/header/Idempotency-Key"
    assert writer.get("/v1/memory").json()["items"] == []  # nothing was written


def test_one_idempotency_key_still_writes(make_client: MakeClient) -> None:
    writer = make_client("acme", "ann", PERMISSIONS)
    headers = [("Content-Type", "application/json"), ("Idempotency-Key", "k1")]
    first = writer.post("/v1/memory", content=BODY, headers=headers)
    again = writer.post("/v1/memory", content=BODY, headers=headers)
    assert first.status_code == 201, first.text
    assert again.json()["id"] == first.json()["id"]


def test_the_token_is_checked_before_the_repeated_header(client: TestClient) -> None:
    answer = client.post(
        "/v1/memory",
        content=BODY,
        headers=[("Content-Type", "application/json"), ("Idempotency-Key", "k1"), ("Idempotency-Key", "k2")],
    )
    assert answer.status_code == 401 and answer.json()["code"] == "unauthorized"


@pytest.mark.parametrize("key", [b"caf\xe9", b"tab\there", b"del\x7f", b"\xe2\x9c\x93"])
def test_an_idempotency_key_outside_printable_ascii_is_refused_over_rest_as_over_mcp(make_client: MakeClient, key: bytes) -> None:
    """REST took ``café`` (its Latin-1 byte) and a tab, which the advertised MCP schema refuses."""
    writer = make_client("acme", "ann", PERMISSIONS)
    answer = writer.post("/v1/memory", content=BODY, headers=[(b"Content-Type", b"application/json"), (b"Idempotency-Key", key)])
    assert answer.status_code == 422, answer.text
    assert [(e["field"], e["rule"]) for e in answer.json()["errors"]] == [("/header/Idempotency-Key", "pattern")]
    assert answer.json()["errors"][0]["message"].startswith("must be printable ASCII")  # not the regex


def test_a_printable_key_with_spaces_is_taken(make_client: MakeClient) -> None:
    writer = make_client("acme", "ann", PERMISSIONS)
    answer = writer.post("/v1/memory", content=BODY, headers={"Content-Type": "application/json", "Idempotency-Key": "order 42 ~ retry"})
    assert answer.status_code == 201, answer.text


@pytest.mark.parametrize(
    ("url_bytes", "header_bytes", "status"),
    [(12_000, 0, 401), (0, 12_000, 401), (8_500, 8_500, 431), (17_000, 0, 431), (0, 17_000, 431)],
)
def test_a_head_over_16_kb_is_a_431_problem_in_the_app_too(client: TestClient, url_bytes: int, header_bytes: int, status: int) -> None:
    """The app refuses a head over the limit that reached it whole (h11 refuses one still
    arriving: ``test_cli_serve``), with a request id, before any token is looked at."""
    response = client.get("/v1/memory/search", params={"q": "a" * url_bytes}, headers={"X-Notes": "n" * header_bytes})
    assert response.status_code == status and response.headers["content-type"] == "application/problem+json", response.text
    if status == 431:
        document = response.json()
        assert document["code"] == "request_head_too_large" and document["request_id"] == response.headers["x-request-id"]
