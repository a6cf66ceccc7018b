"""Search through the API: ranking, scores, empty results, parameter bounds."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient


@pytest.fixture
def ann(make_client) -> TestClient:
    client = make_client("acme", "ann")
    for content in (
        "The user prefers vim as their editor",
        "Editor wars are a waste of time",
        "The user lives in Lisbon",
        "Deploy to the Daytona sandbox with make deploy",
    ):
        assert client.post("/v1/memory", json={"content": content}).status_code == 201
    return client


def search(client: TestClient, **params) -> list[dict]:
    """The hits of a search that must succeed."""
    response = client.get("/v1/memory/search", params=params)
    assert response.status_code == 200, response.text
    return response.json()["results"]


def test_best_match_first_with_scores_in_range(ann: TestClient) -> None:
    hits = search(ann, q="what editor does the user prefer")
    assert hits[0]["content"] == "The user prefers vim as their editor"
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    assert search(ann, q="daytona sandbox deploy")[0]["content"].startswith("Deploy")


def test_zero_hits_is_an_empty_list(ann: TestClient) -> None:
    for q in ("kubernetes", "?!", '"unbalanced AND (quote'):
        response = ann.get("/v1/memory/search", params={"q": q})
        assert (response.status_code, response.json()) == (200, {"results": []})


def test_min_score_and_limit(ann: TestClient) -> None:
    assert len(search(ann, q="user editor", limit=1)) == 1
    assert [h["content"] for h in search(ann, q="user editor", min_score=0.6)] == [
        "The user prefers vim as their editor"
    ]


@pytest.mark.parametrize("params", [{"q": ""}, {"q": "x" * 2001}, {"limit": 0}, {"min_score": 1.5}, {"tags": ["t"] * 33}])
def test_bad_search_params_are_422(ann: TestClient, params) -> None:
    response = ann.get("/v1/memory/search", params=params)
    assert response.status_code == 422
    assert response.json()["code"] == "invalid_params"
