"""Bearer authentication and permissions in front of every operation."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_bank.store import open_database
from memory_bank.store.tokens import TokenStore

OPERATIONS = [
    ("GET", "/v1/memory", None),
    ("POST", "/v1/memory", {"content": "x"}),
    ("GET", "/v1/memory/search?q=x", None),
    ("GET", "/v1/memory/export", None),
    ("GET", "/v1/memory/keypaths/a.b", None),
    ("PUT", "/v1/memory/keypaths/a.b", {"content": "x"}),
    ("GET", "/v1/memory/AAAAAAAAAAAAAAAAAAAAA", None),
    ("PATCH", "/v1/memory/AAAAAAAAAAAAAAAAAAAAA", {"content": "x"}),
    ("DELETE", "/v1/memory/AAAAAAAAAAAAAAAAAAAAA", None),
    ("GET", "/v1/memory/AAAAAAAAAAAAAAAAAAAAA/history", None),
    ("POST", "/v1/memory/AAAAAAAAAAAAAAAAAAAAA/feedback", {"feedback": "helpful"}),
]


@pytest.mark.parametrize(("method", "path", "body"), OPERATIONS)
@pytest.mark.parametrize("authorization", [None, "Bearer mb_not-a-token", "Basic dXNlcjpwYXNz", "Bearer "])
def test_missing_or_bad_token_is_401(client: TestClient, method, path, body, authorization) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    response = client.request(method, path, json=body, headers=headers)
    assert response.status_code == 401
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["code"] == "unauthorized"
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_import_without_token_is_401(client: TestClient) -> None:
    response = client.post("/v1/memory/import", content="{}\n")
    assert response.status_code == 401


def test_revoked_token_is_401(client: TestClient, settings) -> None:
    tokens = TokenStore(open_database(settings))
    plaintext, record = tokens.create("acme", "ann", None, ["memory:read"])
    headers = {"Authorization": f"Bearer {plaintext}"}
    assert client.get("/v1/memory", headers=headers).status_code == 200
    assert tokens.revoke(record.id)
    assert client.get("/v1/memory", headers=headers).json()["code"] == "unauthorized"


def test_scheme_is_case_insensitive(client: TestClient, make_token) -> None:
    token = make_token("acme", "ann")
    assert client.get("/v1/memory", headers={"Authorization": f"bearer {token}"}).status_code == 200


def test_missing_permission_is_403(make_client) -> None:
    reader = make_client("acme", "ann", perms=["memory:read"])
    response = reader.post("/v1/memory", json={"content": "x"})
    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"
    assert reader.post("/v1/memory/import", content="").status_code == 403
    writer = make_client("acme", "ann", perms=["memory:write"])
    assert writer.get("/v1/memory").status_code == 403


def test_admin_implies_read_and_write(make_client) -> None:
    admin = make_client("acme", "ann", perms=["memory:admin"])
    assert admin.post("/v1/memory", json={"content": "x"}).status_code == 201
    assert admin.get("/v1/memory").status_code == 200


def test_tokens_are_stored_as_digests_only(settings) -> None:
    tokens = TokenStore(open_database(settings))
    plaintext, record = tokens.create("acme", "ann", "agent-1", ["memory:read"])
    assert plaintext.startswith("mb_") and plaintext not in record.token_hash
    assert tokens.verify(plaintext).agent_id == "agent-1"
    assert tokens.verify(plaintext + "x") is None
    assert tokens.count() == 1
    with pytest.raises(ValueError):
        tokens.create("acme", "ann", None, ["memory:root"])


@pytest.mark.parametrize("sent", ["none", "not a token", "revoked"])
def test_rest_and_mcp_refuse_a_token_with_one_and_the_same_challenge(app, settings, sent: str) -> None:
    """One builder for both doors: the realm-less RFC 9728 challenge pointing at the resource document."""
    tokens = TokenStore(open_database(settings))
    plaintext, record = tokens.create("acme", "ann", None, ["memory:read"])
    assert tokens.revoke(record.id)
    authorization = {"none": {}, "not a token": {"Authorization": "Bearer mb_not-a-token"},
                     "revoked": {"Authorization": f"Bearer {plaintext}"}}[sent]
    tool_call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                 "params": {"name": "execute_capability", "arguments": {"name": "listMemories"}}}
    with TestClient(app, base_url=settings.public_url) as client:
        rest = client.get("/v1/memory", headers=authorization)
        mcp = client.post("/mcp", json=tool_call, headers={**authorization, "Accept": "application/json, text/event-stream"})
    assert rest.status_code == mcp.status_code == 401
    expected = f'Bearer resource_metadata="{settings.public_url}/.well-known/oauth-protected-resource"'
    if sent != "none":
        expected += ', error="invalid_token"'
    assert rest.headers.get_list("www-authenticate") == mcp.headers.get_list("www-authenticate") == [expected]


@pytest.mark.parametrize("order", ["valid first", "valid last", "both valid"])
def test_two_authorization_headers_are_refused_on_rest_and_mcp(app, settings, order: str) -> None:
    """Starlette reads the first copy, a proxy may read the other: which caller it is must not depend on who asks."""
    tokens = TokenStore(open_database(settings))
    plaintext, _ = tokens.create("acme", "ann", None, ["memory:read"])
    valid, other = f"Bearer {plaintext}", "Bearer mb_not-a-token"
    pair = {"valid first": [valid, other], "valid last": [other, valid], "both valid": [valid, valid]}[order]
    headers = [("Authorization", value) for value in pair]
    tool_call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                 "params": {"name": "execute_capability", "arguments": {"name": "listMemories"}}}
    expected = f'Bearer resource_metadata="{settings.public_url}/.well-known/oauth-protected-resource", error="invalid_token"'
    with TestClient(app, base_url=settings.public_url) as client:
        assert client.get("/v1/memory", headers={"Authorization": valid}).status_code == 200
        rest = client.get("/v1/memory", headers=headers)
        mcp = client.post("/mcp", json=tool_call, headers=[*headers, ("Accept", "application/json, text/event-stream")])
    for answer in (rest, mcp):
        assert answer.status_code == 401, answer.text
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.json()["code"] == "unauthorized"
        assert "one Authorization header" in answer.json()["detail"]
        assert answer.headers.get_list("www-authenticate") == [expected]


SECRET = "mb_3fQxAb0123456789"
MCP_CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "execute_capability", "arguments": {"name": "listMemories"}}}


@pytest.mark.parametrize(
    ("headers", "said", "token_sent"),
    [
        ({}, "send Authorization: Bearer <token>", False),
        ({"X-API-Key": SECRET}, "the token came in an X-API-Key header", False),
        ({"Authorization": ""}, "the Authorization header is empty", False),
        ({"Authorization": f"Baerer {SECRET}"}, "the Authorization scheme Baerer is not Bearer; did you mean Bearer?", False),
        ({"Authorization": f"Token {SECRET}"}, "the Authorization scheme is Token", False),
        ({"Authorization": "Basic dXNlcjpwYXNz"}, "the Authorization scheme is Basic", False),
        ({"Authorization": f"Bearer: {SECRET}"}, "with a colon (Bearer:)", False),
        ({"Authorization": f"bearer:{SECRET}"}, "with a colon (Bearer:)", False),
        ({"Authorization": SECRET}, "a token with no scheme", False),
        ({"Authorization": "Bearer"}, "the Bearer scheme but no token", False),
        ({"Authorization": f"Bearer\t{SECRET}"}, "with something other than a space", False),
        ({"Authorization": f'"Bearer {SECRET}"'}, "the Authorization header's value is in quotes", False),
        ({"Authorization": f'Bearer "{SECRET}"'}, "the bearer token is in quotes", True),
        ({"Authorization": f"Bearer '{SECRET}'"}, "the bearer token is in quotes", True),
        ({"Authorization": "Bearer <token>"}, "the bearer token is in angle brackets", True),
        ({"Authorization": f"Bearer Bearer {SECRET}"}, "the Authorization header says Bearer twice", True),
        ({"Authorization": f"Bearer bearer  {SECRET}"}, "the Authorization header says Bearer twice", True),
        ({"Authorization": f"Frobnicate {SECRET}"}, "the Authorization scheme is not Bearer", False),
    ],
)
def test_a_recognisable_header_mistake_is_named_on_rest_and_mcp_never_the_token(
    app, settings, headers: dict[str, str], said: str, token_sent: bool
) -> None:
    """Every mistake answered "send Authorization: Bearer <token>", which a client that sent
    ``Token mb_...`` or ``X-API-Key`` reads as "you sent nothing". The 401 and its challenge are unchanged."""
    expected = f'Bearer resource_metadata="{settings.public_url}/.well-known/oauth-protected-resource"'
    if token_sent:
        expected += ', error="invalid_token"'
    with TestClient(app, base_url=settings.public_url) as client:
        rest = client.get("/v1/memory", headers=headers)
        mcp = client.post("/mcp", json=MCP_CALL, headers={**headers, "Accept": "application/json, text/event-stream"})
    for answer in (rest, mcp):
        assert answer.status_code == 401, answer.text
        problem = answer.json()
        assert problem["code"] == "unauthorized" and said in problem["detail"], problem["detail"]
        assert problem["detail"].endswith(("Bearer <token>", "instead", "no colon", "no quotes", "around the token", "before the token"))
        assert "3fQxAb" not in answer.text and "dXNlcjpwYXNz" not in answer.text
        assert answer.headers.get_list("www-authenticate") == [expected]


#: Characters of a token scheme (RFC 9110 §11.1), and a secret none of whose runs of five a message could hold.
SCHEME = st.from_regex(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,20}", fullmatch=True)
DIGIT_SECRET = st.text("0123456789", min_size=12, max_size=40)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scheme=SCHEME.filter(lambda s: s.casefold() != "bearer"), secret=DIGIT_SECRET, separator=st.sampled_from([" ", "  ", ":", ": "]))
def test_any_other_scheme_is_401_saying_to_send_bearer_without_echoing_the_token(
    client: TestClient, scheme: str, secret: str, separator: str
) -> None:
    answer = client.get("/v1/memory", headers={"Authorization": f"{scheme}{separator}mb_{secret}"})
    assert answer.status_code == 401
    problem = answer.json()
    assert problem["code"] == "unauthorized" and "send Authorization: Bearer <token>" in problem["detail"]
    said = json.dumps({key: value for key, value in problem.items() if key != "request_id"}) + answer.headers["www-authenticate"]
    assert not any(secret[i : i + 5] in said for i in range(len(secret) - 4))  # the request id is random hex: not what was said
    assert answer.headers["www-authenticate"].startswith("Bearer resource_metadata=") and "error=" not in answer.headers["www-authenticate"]
