"""A query parameter the spec declares single-valued, given twice, is 422 naming it (``api.query``).

FastAPI would take the last value: ``?limit=5&limit=500`` meant ``limit=500``. An array
parameter (``tags``) is repeated by design and stays accepted.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_bank.security.tokens import PERMISSIONS
from support.clients import MakeClient
from support.spec_queries import query_parameters


#: Every single-valued query parameter of every operation, as (operationId, method, path, name).
SINGLE_VALUED = query_parameters(array=False)
#: The array ones, which may repeat.
REPEATABLE = query_parameters(array=True)


@pytest.fixture
def anyone(make_client: MakeClient) -> TestClient:
    """A caller every operation admits: every permission, bound to an agent."""
    return make_client("acme", "ann", PERMISSIONS)


def test_the_spec_has_single_valued_query_parameters_on_both_apis() -> None:
    """The sweep below covers the memory API and the admin one."""
    assert {"getMemorySearch", "listMemories", "searchCapabilities", "listTokens", "listAgents"} <= {op for op, *_ in SINGLE_VALUED}
    assert ("getMemorySearch", "GET", "/v1/memory/search", "tags") in REPEATABLE


@pytest.mark.parametrize(("operation", "method", "path", "name"), SINGLE_VALUED, ids=[f"{s[0]}-{s[3]}" for s in SINGLE_VALUED])
def test_a_repeated_single_valued_parameter_is_invalid_params_naming_it(
    anyone: TestClient, operation: str, method: str, path: str, name: str
) -> None:
    # Values each acceptable alone, so that only the repeat can be what is refused.
    value = {"limit": "5", "include_superseded": "true", "include_revoked": "true", "include_schema": "true", "min_score": "0.5"}.get(
        name, "garden"
    )
    answer = anyone.request(method, f"{path}?{urlencode([(name, value), (name, value)])}")
    assert answer.status_code == 422, (operation, answer.text)
    assert answer.headers["content-type"] == "application/problem+json"
    problem = answer.json()
    assert problem["code"] == "invalid_params"
    assert problem["errors"] == [{"field": f"/query/{name}", "rule": "type", "message": "given 2 times; it takes one value"}]
    assert f"/query/{name}" in problem["detail"]


@pytest.mark.parametrize(
    "query",
    [
        [("q", "a"), ("q", "b")],
        [("limit", "5"), ("limit", "500")],
        [("limit", "500"), ("limit", "5")],  # the last value alone would be accepted
        [("limit", "5"), ("q", "a"), ("limit", "5")],  # the same value twice, not side by side
    ],
)
def test_memory_search_takes_no_last_value(anyone: TestClient, query: list[tuple[str, str]]) -> None:
    answer = anyone.get(f"/v1/memory/search?{urlencode(query)}")
    assert answer.status_code == 422 and answer.json()["code"] == "invalid_params"
    names = {name for name, _ in query if sum(n == name for n, _ in query) > 1}
    assert [e["field"] for e in answer.json()["errors"]] == [f"/query/{n}" for n in names]


def test_an_admin_listing_refuses_a_repeated_limit(make_client: MakeClient) -> None:
    admin = make_client("acme", "root", ["memory:admin"], None)
    assert admin.get("/v1/admin/tokens?limit=5").status_code == 200
    answer = admin.get("/v1/admin/tokens?limit=5&include_revoked=false&limit=50")
    assert answer.status_code == 422
    assert [e["field"] for e in answer.json()["errors"]] == ["/query/limit"]
    answer = admin.get("/v1/admin/agents?cursor=a&cursor=b")
    assert answer.status_code == 422 and [e["field"] for e in answer.json()["errors"]] == ["/query/cursor"]


def test_every_repeated_parameter_is_named_in_the_spec_s_order(anyone: TestClient) -> None:
    answer = anyone.get("/v1/memory?category=fact&limit=2&limit=3&category=fact&category=note")
    assert answer.status_code == 422
    assert answer.json()["errors"] == [
        {"field": "/query/limit", "rule": "type", "message": "given 2 times; it takes one value"},
        {"field": "/query/category", "rule": "type", "message": "given 3 times; it takes one value"},
    ]


def test_an_array_parameter_still_repeats(anyone: TestClient) -> None:
    anyone.post("/v1/memory", json={"content": "spring garden plan", "tags": ["garden", "spring"]})
    listed = anyone.get("/v1/memory?tags=garden&tags=spring")
    assert listed.status_code == 200 and len(listed.json()["items"]) == 1
    found = anyone.get("/v1/memory/search?q=garden&tags=garden&tags=spring")
    assert found.status_code == 200 and len(found.json()["results"]) == 1


def test_the_token_is_checked_before_the_repeat(client: TestClient) -> None:
    """As for every other invalid argument: a bad token is 401 before the query is looked at."""
    answer = client.get("/v1/memory/search?q=a&q=b")
    assert answer.status_code == 401 and answer.json()["code"] == "unauthorized"


def test_a_repeat_is_refused_before_the_other_arguments_are_read(anyone: TestClient) -> None:
    """One 422 names the repeat even where the values would fail too: the client must send it once first."""
    answer = anyone.get("/v1/memory/search?q=a&limit=0&limit=x")
    assert [e["field"] for e in answer.json()["errors"]] == ["/query/limit"]


SEARCH_PARAMETERS = [name for op, _, _, name in SINGLE_VALUED if op == "getMemorySearch"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(st.sampled_from([*SEARCH_PARAMETERS, "tags"]), st.text(st.characters(codec="utf-8"), max_size=8)),
        max_size=12,
    )
)
def test_a_query_string_is_refused_exactly_when_a_single_valued_name_repeats(anyone: TestClient, query: list[tuple[str, str]]) -> None:
    """Whatever the values and their order: 422 naming exactly the repeated single-valued
    names, in the spec's order, or else no error that names a repeat."""
    answer = anyone.get(f"/v1/memory/search?{urlencode(query)}")
    counts = {name: sum(n == name for n, _ in query) for name in SEARCH_PARAMETERS}
    repeated = [f"/query/{name}" for name in SEARCH_PARAMETERS if counts[name] > 1]
    errors = answer.json().get("errors", []) if answer.status_code == 422 else []
    named_repeats = [e["field"] for e in errors if e["message"].startswith("given ")]
    if repeated:
        assert answer.status_code == 422 and named_repeats == repeated == [e["field"] for e in errors]
    else:
        assert named_repeats == []
