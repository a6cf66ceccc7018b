"""The one map from domain errors to problem documents, and the re-pointing of field paths at the edge."""

from __future__ import annotations

import pytest

from memory_bank.api.problems import PROBLEM_TYPES, headers_of, problem_document, status_of
from memory_bank.errors import (
    ERROR_BY_CODE,
    Conflict,
    ErrorCode,
    FieldError,
    InvalidInput,
    RateLimited,
    Unauthorized,
    fields_from,
)


def test_every_code_has_one_error_class_and_one_problem_type() -> None:
    assert set(ERROR_BY_CODE) == set(ErrorCode) == set(PROBLEM_TYPES)
    assert all(cls.code is code for code, cls in ERROR_BY_CODE.items())


def test_a_problem_document_carries_the_code_status_title_and_field_errors() -> None:
    error = InvalidInput("bad", [FieldError("/body/content", "minLength", "too short")])
    assert problem_document(error, request_id="r1", instance="/v1/memory") == {
        "type": "https://memory-bank.dev/problems/invalid_params",
        "title": "Invalid parameters",
        "status": 422,
        "code": "invalid_params",
        "detail": "bad",
        "instance": "/v1/memory",
        "request_id": "r1",
        "errors": [{"field": "/body/content", "rule": "minLength", "message": "too short"}],
    }
    assert status_of(Conflict("x")) == 409


def test_the_headers_a_code_implies() -> None:
    assert headers_of(Unauthorized("no token")) == {}  # the challenge comes with the token check's refusal
    assert headers_of(RateLimited("spent", retry_after=15)) == {"Retry-After": "15"}
    assert headers_of(Conflict("x")) == {}


@pytest.mark.parametrize(
    ("source", "path", "pointer"),
    [("query", "cursor", "/query/cursor"), ("body", "line 3", "/body/line/3"), ("body", "", "/body")],
)
def test_a_field_path_is_re_pointed_into_the_request_part_it_came_from(source: str, path: str, pointer: str) -> None:
    with pytest.raises(InvalidInput) as raised, fields_from(source):
        raise InvalidInput("bad", [FieldError(path, "format", "m")])
    assert [e.field for e in raised.value.errors] == [pointer]
