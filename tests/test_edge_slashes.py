"""A trailing slash is a 404 problem, never a redirect built from the client's Host header; a
misspelt route is a 404 that names the route."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from memory_bank.generated.spec import SPEC

PATHS = ["/v1/memory/", "/v1/memory/search/?q=a", "/v1/memory/export/", "/mcp/", "/docs/", "/health/"]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_trailing_slash_is_not_redirected_to_the_hosts_name(client: TestClient, make_token, path: str, method: str) -> None:
    headers = {"Host": "evil.example", "Authorization": f"Bearer {make_token('acme', 'ann')}"}
    response = client.request(method, path, headers=headers, follow_redirects=False)
    assert "location" not in response.headers
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["code"] == "not_found"
    bare = path.split("?")[0].rstrip("/")
    served = client.request(method, bare, headers=headers).status_code not in (404, 405)  # for this method
    hint = f"nothing is served at {bare}/; {bare} is (without the trailing slash)"
    assert response.json()["detail"] == (hint if served else "Not Found")


def test_a_path_that_is_not_served_either_way_is_a_plain_404(client: TestClient) -> None:
    assert client.get("/v1/nothing/").json()["detail"] == "Not Found"
    assert client.delete("/v1/memory/").json()["detail"] == "Not Found"  # DELETE /v1/memory is no route either


def test_the_root_still_lands_on_the_docs(client: TestClient) -> None:
    response = client.get("/", follow_redirects=False)
    assert response.status_code == 307 and response.headers["location"] == "/docs"


#: A value each path parameter of the spec accepts, to fill a route's placeholders with.
VALUES = {"memory_id": "A" * 21, "keypath": "user.editor", "token_id": "B" * 21, "agent_id": "laptop"}
GET_ROUTES = sorted(path for path, item in SPEC["paths"].items() if "get" in item)


def _filled(template: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda placeholder: VALUES[placeholder[1]], template)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_route_misspelt_in_one_segment_is_named(client: TestClient, make_token, data: st.DataObject) -> None:
    """/v1/memory/serch was read as a memory id (422 'should match pattern'), /v1/memroy was a bare
    404: a path one literal segment away from a route is a 404 that names the route."""
    template = data.draw(st.sampled_from(GET_ROUTES))
    parts = template.split("/")
    words = [i for i, part in enumerate(parts) if len(part) >= 5 and not part.startswith("{")]
    assume(words)
    at = data.draw(st.sampled_from(words))
    cut = data.draw(st.integers(1, len(parts[at]) - 2))  # drop one inner letter: "search" -> "serch"
    misspelt = [*parts[:at], parts[at][:cut] + parts[at][cut + 1 :], *parts[at + 1 :]]
    sent = _filled("/".join(misspelt))
    assume(not any(re.fullmatch(re.sub(r"\{\w+\}", "[^/]+", route), sent) for route in SPEC["paths"]))
    response = client.get(sent, headers={"Authorization": f"Bearer {make_token('acme', 'ann')}"})
    assert response.status_code == 404
    assert response.json()["detail"] == f"nothing is served at {sent}; did you mean {_filled(template)}?"


def test_a_misspelt_route_with_its_own_query_is_named_and_a_real_id_keeps_its_422(client: TestClient, make_token) -> None:
    headers = {"Authorization": f"Bearer {make_token('acme', 'ann')}"}
    assert client.get("/v1/memory/serch?q=sister", headers=headers).json()["detail"].endswith("did you mean /v1/memory/search?")
    assert client.get("/v1/memory/serch?query=sister", headers=headers).status_code == 422  # search takes no "query"
    short_id = client.get("/v1/memory/" + "A" * 20, headers=headers)
    assert short_id.status_code == 422 and short_id.json()["errors"][0]["field"] == "/path/memory_id"
