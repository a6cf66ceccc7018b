"""A query parameter the operation does not declare is 422 naming it (``api.query.checked_query``).

FastAPI ignores one, so ``GET /v1/memory/search?query=sister`` (for ``q``) was read as no
query at all and answered every memory at score 1, and ``?tag=work`` (for ``tags``) as no
filter: a new user's typo changed what the request meant without a word. An unknown body
field has been refused all along; a query parameter now is too, told the name it misspells.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_bank.security.tokens import PERMISSIONS
from support.clients import MakeClient
from support.spec_queries import operations

OPERATIONS = list(operations())


@pytest.fixture
def anyone(make_client: MakeClient) -> TestClient:
    """A caller every operation admits: every permission, bound to an agent."""
    return make_client("acme", "ann", PERMISSIONS)


def refusal(answer: object) -> list[dict[str, str]]:
    assert getattr(answer, "status_code") == 422, getattr(answer, "text")
    problem = getattr(answer, "json")()
    assert problem["code"] == "invalid_params"
    errors: list[dict[str, str]] = problem["errors"]
    return errors


@pytest.mark.parametrize(("operation", "method", "path", "query"), OPERATIONS, ids=[o[0] for o in OPERATIONS])
def test_every_operation_refuses_a_name_it_does_not_declare_and_says_which_it_takes(
    anyone: TestClient, operation: str, method: str, path: str, query: list[tuple[str, str]]
) -> None:
    errors = refusal(anyone.request(method, f"{path}?zzz_unknown=1", json={} if method in ("POST", "PUT", "PATCH") else None))
    takes = ", ".join(name for name, _ in query) or "none"
    assert {"field": "/query/zzz_unknown", "rule": "additionalProperties", "message": f"is not a parameter of this operation; it takes {takes}"} in errors


@pytest.mark.parametrize(("sent", "meant"), [("tag", "tags"), ("Limit", "limit"), ("min_scor", "min_score"), ("Q", "q")])
def test_a_misspelt_search_parameter_is_told_the_one_it_misspells(anyone: TestClient, sent: str, meant: str) -> None:
    errors = refusal(anyone.get(f"/v1/memory/search?{urlencode({'q': 'sister', sent: '5'} if sent != 'Q' else {sent: 'sister'})}"))
    assert errors == [{"field": f"/query/{sent}", "rule": "additionalProperties", "message": f"is not a parameter of this operation; did you mean {meant}?"}]


def test_the_new_user_s_query_for_q_no_longer_answers_every_memory(anyone: TestClient) -> None:
    anyone.post("/v1/memory", json={"content": "my sister lives in Lisbon"})
    anyone.post("/v1/memory", json={"content": "standup is at 9:30"})
    errors = refusal(anyone.get("/v1/memory/search?query=sister"))
    assert [e["field"] for e in errors] == ["/query/query"]
    assert len(anyone.get("/v1/memory/search?q=sister").json()["results"]) == 1


SEARCH_DECLARED = next(query for op, _, _, query in OPERATIONS if op == "getMemorySearch")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=12), max_size=5))
def test_a_search_is_refused_exactly_when_it_names_an_undeclared_parameter(anyone: TestClient, names: list[str]) -> None:
    declared = {name for name, _ in SEARCH_DECLARED}
    answer = anyone.get(f"/v1/memory/search?{urlencode([('q', 'x'), *((name, 'x') for name in names)])}")
    unknown = [f"/query/{name}" for name in dict.fromkeys(names) if name not in declared]
    fields = [e["field"] for e in answer.json().get("errors", [])] if answer.status_code == 422 else []
    assert [f for f in fields if f in unknown] == unknown
    if unknown:
        assert answer.status_code == 422
