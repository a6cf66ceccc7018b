"""A trailing slash is a 404 problem, never a redirect built from the client's Host header."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

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
