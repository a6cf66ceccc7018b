"""Spec loading and the house-rule lint: every rule must fail loudly, naming operation and rule."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from memory_bank_codegen.errors import SpecIssue
from memory_bank_codegen.lint import lint_spec
from memory_bank_codegen.loader import SpecError, load_spec

PROBLEM = {"content": {"application/problem+json": {"schema": {"type": "object"}}}}


def clean_operation(operation_id: str = "getThing") -> dict[str, Any]:
    """An operation that passes every rule; tests break one thing at a time."""
    return {
        "operationId": operation_id,
        "summary": "Get a thing",
        "description": "Returns the thing.",
        "x-capability": {"category": "Things", "permission": "memory:read", "expose": True},
        "parameters": [{"name": "q", "in": "query", "schema": {"type": "string"}}],
        "responses": {
            "200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object"}}}},
            "401": {"$ref": "#/components/responses/Problem"},
            "422": {"description": "bad", **PROBLEM},
        },
    }


def spec_with(*operations: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """A 3.1 spec holding ``(path, method, operation)`` triples."""
    paths: dict[str, Any] = {}
    for path, method, operation in operations:
        paths.setdefault(path, {})[method] = operation
    return {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": paths,
        "components": {"responses": {"Problem": {"description": "problem", **PROBLEM}}},
    }


def broken(mutate: Any) -> list[SpecIssue]:
    operation = clean_operation()
    mutate(operation)
    return lint_spec(spec_with(("/things", "get", operation)))


def test_clean_spec_has_no_issues() -> None:
    assert lint_spec(spec_with(("/things", "get", clean_operation()))) == []


@pytest.mark.parametrize(
    ("mutate", "rule"),
    [
        (lambda op: op.update(operationId="get" + "X" * 70), "operation-id-length"),
        (lambda op: op.update(operationId="get_thing"), "operation-id-camel-case"),
        (lambda op: op.update(operationId="GetThing"), "operation-id-camel-case"),
        (lambda op: op.pop("summary"), "summary-present"),
        (lambda op: op.update(summary="  "), "summary-present"),
        (lambda op: op.pop("description"), "description-present"),
        (lambda op: op.pop("x-capability"), "x-capability-present"),
        (lambda op: op["x-capability"].update(category=""), "x-capability-category"),
        (lambda op: op["x-capability"].update(permission="memory:delete"), "x-capability-permission"),
        (lambda op: op["x-capability"].pop("permission"), "x-capability-permission"),
        (lambda op: op["x-capability"].update(expose="yes"), "x-capability-expose"),
        (lambda op: op["x-capability"].pop("expose"), "x-capability-expose"),
        (lambda op: op["x-capability"].update(examples="save this"), "x-capability-examples"),
        (lambda op: op["x-capability"].update(examples=["save this", " "]), "x-capability-examples"),
        (lambda op: op["x-capability"].update(examples=[3]), "x-capability-examples"),
        (lambda op: op["responses"].pop("401"), "error-responses-declared"),
        (lambda op: op["responses"].pop("422"), "error-responses-declared"),
        (lambda op: op["responses"].update({"404": {"description": "x"}}), "error-response-problem-json"),
        (
            lambda op: op["responses"].update({"500": {"description": "x", "content": {"application/json": {}}}}),
            "error-response-problem-json",
        ),
        (lambda op: op["responses"].update({"409": {"$ref": "#/components/responses/Missing"}}), "error-response-problem-json"),
    ],
)
def test_each_rule_names_operation_and_rule(mutate: Any, rule: str) -> None:
    issues = broken(mutate)
    assert [i.rule for i in issues] == [rule], issues
    operation_id = issues[0].operation
    assert operation_id in ("getThing", "get" + "X" * 70, "get_thing", "GetThing")
    assert str(issues[0]).startswith(f"{operation_id}: {rule}: ")


def with_input(operation: dict[str, Any]) -> dict[str, Any]:
    """``operation`` with a path parameter and a JSON body, both carrying valid examples."""
    operation["parameters"].append({"name": "id", "in": "path", "required": True, "schema": {"type": "string", "pattern": "^[a-z]+$"}, "example": "abc"})
    body_schema = {"type": "object", "required": ["content"], "properties": {"content": {"type": "string", "minLength": 1}}}
    operation["requestBody"] = {"content": {"application/json": {"schema": body_schema, "example": {"content": "a real note"}}}}
    return operation


def test_examples_that_are_present_and_fit_pass() -> None:
    assert lint_spec(spec_with(("/things/{id}", "post", with_input(clean_operation())))) == []


@pytest.mark.parametrize(
    ("mutate", "rule", "says"),
    [
        (lambda op: op["parameters"][1].pop("example"), "example-present", "path parameter 'id' needs an example"),
        (lambda op: op["requestBody"]["content"]["application/json"].pop("example"), "example-present", "request body application/json"),
        (lambda op: op["parameters"][1].update(example="ABC"), "example-valid", "path parameter 'id' example fails its schema at /"),
        (lambda op: op["parameters"][0].update(example=7), "example-valid", "query parameter 'q' example fails its schema"),
        (
            lambda op: op["requestBody"]["content"]["application/json"].update(example={"content": ""}),
            "example-valid",
            "request body application/json example fails its schema at /content",
        ),
        (
            lambda op: op["requestBody"]["content"]["application/json"].update(examples={"bad": {"value": {}}}),
            "example-valid",
            "examples.bad fails its schema at /: 'content' is a required property",
        ),
        (
            lambda op: op["responses"]["200"]["content"]["application/json"].update(example=[1]),
            "example-valid",
            "response 200 application/json example fails its schema",
        ),
    ],
)
def test_a_missing_or_misfitting_example_is_named(mutate: Any, rule: str, says: str) -> None:
    operation = with_input(clean_operation())
    mutate(operation)
    issues = lint_spec(spec_with(("/things/{id}", "post", operation)))
    assert [i.rule for i in issues] == [rule], issues
    assert says in issues[0].message, issues[0].message


def test_an_optional_parameter_needs_no_example() -> None:
    """A pre-filled optional filter would change what running the operation unchanged does."""
    assert "example" not in clean_operation()["parameters"][0] and broken(lambda op: None) == []


def test_an_operation_without_input_need_not_declare_422() -> None:
    op = clean_operation()
    op.pop("parameters")
    op["responses"].pop("422")
    assert lint_spec(spec_with(("/things", "get", op))) == []


def test_any_area_permission_is_accepted() -> None:
    assert broken(lambda op: op["x-capability"].update(permission="billing:admin")) == []


def test_missing_operation_id_is_named_by_method_and_path() -> None:
    issues = broken(lambda op: op.pop("operationId"))
    assert [(i.operation, i.rule) for i in issues] == [("GET /things", "operation-id-present")]


def test_duplicate_operation_ids_name_both_places() -> None:
    issues = lint_spec(spec_with(("/a", "get", clean_operation("getA")), ("/b", "get", clean_operation("getA"))))
    assert [(i.operation, i.rule) for i in issues] == [("getA", "operation-id-unique")]
    assert "GET /b" in issues[0].message and "GET /a" in issues[0].message


def test_spec_without_operations_is_a_global_issue() -> None:
    assert [(i.operation, i.rule) for i in lint_spec(spec_with())] == [("spec", "operations-present")]


def test_lint_issue_str() -> None:
    assert str(SpecIssue("postMemory", "summary-present", "missing")) == "postMemory: summary-present: missing"


# --- loader -----------------------------------------------------------------------------------------


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


YAML_SPEC = """\
openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /x:
    get:
      responses:
        200: {description: bare int code}
        "201": {description: quoted code}
      x-flags: {on: yes, off: no, when: 2024-01-01, really: true}
"""


def test_yaml_keeps_response_codes_words_and_dates_as_strings(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path, "spec.yaml", YAML_SPEC))
    operation = spec["paths"]["/x"]["get"]
    assert list(operation["responses"]) == ["200", "201"]
    assert operation["x-flags"] == {"on": "yes", "off": "no", "when": "2024-01-01", "really": True}
    json.dumps(spec)  # JSON-compatible all the way down


def test_json_is_loaded_by_suffix_or_content(tmp_path: Path) -> None:
    document = {"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {}}
    assert load_spec(write(tmp_path, "a.json", json.dumps(document))) == document
    assert load_spec(write(tmp_path, "a.spec", json.dumps(document))) == document


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("dup.yaml", "openapi: 3.1.0\nopenapi: 3.1.0\n", "duplicate key"),
        ("list.yaml", "- 1\n- 2\n", "not a mapping"),
        ("swagger.yaml", "swagger: '2.0'\n", "not an OpenAPI 3.x"),
        ("version.yaml", "openapi: 3.1\n", "not an OpenAPI 3.x"),  # a float, not a version string
        ("bad.json", "{not json", "invalid JSON"),
        ("bad.yaml", "a: [1,\n", "invalid YAML"),
        ("paths.yaml", "openapi: 3.1.0\npaths: [1]\n", "'paths' is not a mapping"),
    ],
)
def test_bad_documents_raise_spec_error_naming_the_file(tmp_path: Path, name: str, text: str, needle: str) -> None:
    path = write(tmp_path, name, text)
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert str(caught.value).startswith(f"{path}: ") and needle in str(caught.value)
    assert caught.value.path == str(path)


def test_unreadable_file_raises_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="cannot read"):
        load_spec(tmp_path / "missing.yaml")


def test_lint_does_not_mutate_the_spec() -> None:
    spec = spec_with(("/things", "get", clean_operation()))
    before = copy.deepcopy(spec)
    lint_spec(spec)
    assert spec == before
