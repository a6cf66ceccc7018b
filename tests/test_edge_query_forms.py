"""A query integer is written ``-?[0-9]+``, a query number as JSON writes one and a query boolean
``true`` or ``false``, as the specs' form says.

FastAPI's lax parsing took ``limit=+5``, ``limit= 5``, ``limit=5_0`` and ``include_schema=yes``,
``on`` or ``1``: forms the OpenAPI spelling of a query value does not have, which another
server of the same spec would refuse. Every generated route of both specs now refuses
them with 422 ``invalid_params`` naming the parameter and the form it takes.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote_from_bytes, urlencode

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, example, given
from hypothesis import settings as examples
from hypothesis import strategies as st

from memory_bank.security.tokens import PERMISSIONS
from memory_bank.settings import Settings
from support.clients import MakeClient, MakeToken
from support.mcp_live import call_tool
from support.spec_queries import operations, query_parameters

INTEGERS = query_parameters(kind="integer")
BOOLEANS = query_parameters(kind="boolean")
NUMBERS = query_parameters(kind="number")
#: The operations that take ``q`` (the search needs one); another refuses it as unknown.
TAKES_Q = {(method, path) for _, method, path, query in operations() if any(name == "q" for name, _ in query)}


def base(method: str, path: str) -> list[tuple[str, str]]:
    """The query every request of an operation starts from: a ``q`` where it takes one."""
    return [("q", "garden")] if (method, path) in TAKES_Q else []


@pytest.fixture
def settings(database_url: str) -> Settings:
    """A budget the property's few hundred requests in a minute do not spend."""
    return Settings(database_url=database_url, rate_limit_rpm=100_000)


@pytest.fixture
def anyone(make_client: MakeClient) -> TestClient:
    """A caller every operation admits: every permission, bound to an agent."""
    return make_client("acme", "ann", PERMISSIONS)


def refused(answer: object, name: str, form: str) -> None:
    assert answer.status_code == 422, answer.text  # type: ignore[attr-defined]
    problem = answer.json()  # type: ignore[attr-defined]
    assert problem["code"] == "invalid_params"
    errors = [e for e in problem["errors"] if e["field"] == f"/query/{name}"]
    assert errors and errors[0]["rule"] == "type" and form in errors[0]["message"], problem


def test_both_specs_have_integer_and_boolean_query_parameters() -> None:
    assert {"listMemories", "getMemorySearch", "searchCapabilities", "listTokens", "listAgents"} == {op for op, *_ in INTEGERS}
    assert {"searchCapabilities", "listTokens"} <= {op for op, *_ in BOOLEANS}


@pytest.mark.parametrize("value", ["+5", " 5", "5 ", "5_0", "0x5", "5.0", "٥", "", "5\n"])
@pytest.mark.parametrize(("operation", "method", "path", "name"), INTEGERS, ids=[f"{s[0]}-{s[3]}" for s in INTEGERS])
def test_an_integer_in_another_form_is_422_naming_it(anyone: TestClient, operation, method, path, name, value) -> None:
    refused(anyone.request(method, f"{path}?{urlencode([*base(method, path), (name, value)])}"), name, "digits")


@pytest.mark.parametrize("value", ["yes", "no", "on", "off", "1", "0", "True", "FALSE", "t", ""])
@pytest.mark.parametrize(("operation", "method", "path", "name"), BOOLEANS, ids=[f"{s[0]}-{s[3]}" for s in BOOLEANS])
def test_a_boolean_in_another_form_is_422_naming_it(anyone: TestClient, operation, method, path, name, value) -> None:
    refused(anyone.request(method, f"{path}?{urlencode([*base(method, path), (name, value)])}"), name, "true or false")


@pytest.mark.parametrize(("operation", "method", "path", "name"), INTEGERS, ids=[f"{s[0]}-{s[3]}" for s in INTEGERS])
def test_digits_with_an_optional_minus_are_an_integer(anyone: TestClient, operation, method, path, name) -> None:
    """``05`` is 5, and ``-1`` is an integer the bounds then refuse (``minimum``), not a form error."""
    assert anyone.request(method, f"{path}?{urlencode([*base(method, path), (name, '05')])}").status_code == 200
    below = anyone.request(method, f"{path}?{urlencode([*base(method, path), (name, '-1')])}")
    assert below.status_code == 422 and [e["rule"] for e in below.json()["errors"]] == ["minimum"]


@pytest.mark.parametrize("value", ["9" * 4301, "9" * 5000, "-" + "9" * 5000])
@pytest.mark.parametrize(("operation", "method", "path", "name"), INTEGERS, ids=[f"{s[0]}-{s[3]}" for s in INTEGERS])
def test_an_integer_of_thousands_of_digits_is_out_of_bounds(anyone: TestClient, operation, method, path, name, value) -> None:
    """Digits past what the parser reads are still an integer, beyond every bound: ``maximum``
    or ``minimum`` as for 20 digits, not the parser's own name for its limit."""
    answer = anyone.request(method, f"{path}?{urlencode([*base(method, path), (name, value)])}")
    assert answer.status_code == 422, answer.text
    rule = "minimum" if value.startswith("-") else "maximum"
    assert [(e["field"], e["rule"]) for e in answer.json()["errors"]] == [(f"/query/{name}", rule)], answer.text


def test_both_specs_have_a_number_query_parameter() -> None:
    assert {("getMemorySearch", "min_score")} <= {(op, name) for op, _, _, name in NUMBERS}


@pytest.mark.parametrize("value", ["+0.5", " 0.5", "0.5 ", "0_5", "1_0", ".5", "5.", "0x1", "1e", "nan", "NaN", "inf", "-Infinity", "٠.5", ""])
@pytest.mark.parametrize(("operation", "method", "path", "name"), NUMBERS, ids=[f"{s[0]}-{s[3]}" for s in NUMBERS])
def test_a_number_in_another_form_is_422_naming_it(anyone: TestClient, operation, method, path, name, value) -> None:
    """pydantic's lax float read ``1_0`` as 10, `` 1`` as 1 and ``nan`` as a number; JSON's grammar has none of them."""
    refused(anyone.request(method, f"{path}?{urlencode([*base(method, path), (name, value)])}"), name, "JSON")


@pytest.mark.parametrize("value", ["0", "1", "0.5", "-0", "5e-1", "1E-2", "0.25e+0", "00.5"])
@pytest.mark.parametrize(("operation", "method", "path", "name"), NUMBERS, ids=[f"{s[0]}-{s[3]}" for s in NUMBERS])
def test_a_number_as_json_writes_it_is_read(anyone: TestClient, operation, method, path, name, value) -> None:
    """What a JSON encoder writes (and, as for integers, leading zeros) is a number; bounds apply after."""
    assert anyone.request(method, f"{path}?{urlencode([*base(method, path), (name, value)])}").status_code == 200


@pytest.mark.parametrize(("operation", "method", "path", "name"), BOOLEANS, ids=[f"{s[0]}-{s[3]}" for s in BOOLEANS])
def test_true_and_false_are_a_boolean(anyone: TestClient, operation, method, path, name) -> None:
    for value in ("true", "false"):
        assert anyone.request(method, f"{path}?{urlencode([*base(method, path), (name, value)])}").status_code == 200


def test_the_token_is_checked_before_the_form(client: TestClient) -> None:
    answer = client.get("/v1/memory?limit=+5")
    assert answer.status_code == 401 and answer.json()["code"] == "unauthorized"


#: Per generated query parameter: the form the spec writes it in, and the word the refusal names.
_FORMS = [
    *((parameter, re.compile(r"-?[0-9]+"), "digits") for parameter in INTEGERS),
    *((parameter, re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?"), "JSON") for parameter in NUMBERS),
]
_FIRST_NUMBER = len(INTEGERS)


@examples(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(form=st.sampled_from(_FORMS), value=st.text(st.characters(codec="utf-8"), max_size=12))
@example(form=_FORMS[0], value="+5")
@example(form=_FORMS[0], value="\x00")
@example(form=_FORMS[0], value="9" * 5000)
@example(form=_FORMS[_FIRST_NUMBER], value="1_0")
@example(form=_FORMS[_FIRST_NUMBER], value="9" * 5000)
@example(form=_FORMS[_FIRST_NUMBER], value="1e99999")
def test_any_string_not_in_a_parameter_s_form_is_422_and_never_500(anyone: TestClient, form: Any, value: str) -> None:
    """For every generated integer (``-?[0-9]+``) and number (as JSON writes one) query parameter:
    a value not in its form is 422 naming it; nothing is a 500."""
    (_, method, path, name), written, word = form
    answer = anyone.request(method, f"{path}?{urlencode([*base(method, path), (name, value)])}")
    assert answer.status_code < 500, answer.text
    if not written.fullmatch(value):
        refused(answer, name, word)
    else:
        assert answer.status_code in (200, 422)


@pytest.mark.parametrize(("query", "accepted"), [({"limit": 5}, True), ({"limit": 5.0}, True), ({"limit": 5.5}, False), ({"include_superseded": True}, True)])
def test_mcp_arguments_stay_typed_json(app: FastAPI, make_token: MakeToken, query: dict[str, Any], accepted: bool) -> None:
    """A tool call's query is JSON checked against the tool's schema, where ``5.0`` is an integer:
    it reaches the route as ``5``, not in a form the route refuses."""
    with TestClient(app, base_url="http://127.0.0.1") as local:
        result = call_tool(local, make_token("acme", "ann"), "execute_capability", {"name": "listMemories", "query": query})
    assert result["isError"] is not accepted, result




#: Every query parameter of both specs, for the encoding sweep.
ALL_QUERY = query_parameters()


def undecodable(answer: object, field: str) -> None:
    """422 ``invalid_params`` with an ``encoding`` failure at ``field``: what a body that is not UTF-8 gets."""
    assert answer.status_code == 422, answer.text  # type: ignore[attr-defined]
    problem = answer.json()  # type: ignore[attr-defined]
    assert problem["code"] == "invalid_params" and problem["errors"][0]["field"] == field, problem
    assert problem["errors"][0]["rule"] == "encoding" and "not valid UTF-8" in problem["errors"][0]["message"]


@pytest.mark.parametrize("value", ["%FF%FE", "%ED%A0%80", "%C3", "ok%80", "%F4%90%80%80"])
@pytest.mark.parametrize(("operation", "method", "path", "name"), ALL_QUERY, ids=[f"{s[0]}-{s[3]}" for s in ALL_QUERY])
def test_a_query_value_that_is_not_utf8_once_decoded_is_422_naming_it(anyone: TestClient, operation, method, path, name, value) -> None:
    """Starlette read ``?q=%FF%FE`` as two U+FFFD and answered 200; a body of those bytes was 422."""
    undecodable(anyone.request(method, f"{path}?{urlencode(base(method, path))}&{name}={value}"), f"/query/{name}")


def test_a_query_string_that_is_not_utf8_is_refused_with_the_code_and_rule_a_body_is(anyone: TestClient) -> None:
    body = anyone.post("/v1/memory/import", content=b"\xff\xfe", headers={"Content-Type": "application/x-ndjson"}).json()
    query = anyone.get("/v1/memory/search?q=%FF%FE").json()
    assert (query["code"], query["errors"][0]["rule"]) == (body["code"], body["errors"][0]["rule"]) == ("invalid_params", "encoding")
    assert query["errors"][0]["message"].startswith(body["errors"][0]["message"])
    undecodable(anyone.get("/v1/memory/search?q=x&%FF=1"), "/query")
    assert anyone.get("/v1/memory/search?q=%C3%A9t%C3%A9").status_code == 200


def test_the_token_is_checked_before_the_encoding(client: TestClient) -> None:
    assert client.get("/v1/memory/search?q=%FF").status_code == 401


@examples(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.one_of(st.binary(min_size=1, max_size=8), st.text(min_size=1, max_size=8).map(lambda t: t.encode("utf-8", "surrogatepass"))))
@example(value=b"\xed\xa0\x80")
@example(value="é".encode())
def test_a_query_value_is_refused_exactly_when_its_bytes_are_not_utf8(anyone: TestClient, value: bytes) -> None:
    answer = anyone.get(f"/v1/memory/search?q={quote_from_bytes(value)}")
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        undecodable(answer, "/query/q")
    else:
        assert answer.status_code in (200, 422) and all(e["rule"] != "encoding" for e in answer.json().get("errors", []))
