"""The checks execute_capability makes before dispatching: pointers, rules, types, wrapping, JSON text."""

from __future__ import annotations

from jsonschema import Draft202012Validator

from memory_bank.capabilities.execute import decode_groups, is_wrapped, schema_failures
from memory_bank.generated.catalog import CAPABILITIES
from memory_bank.problems import validation_error

CATALOG = {c["name"]: c for c in CAPABILITIES}
POST = CATALOG["postMemory"]["inputSchema"]


def failures(arguments: dict) -> list[tuple[str, str, str]]:
    return [(f.field, f.rule, f.message) for f in schema_failures(Draft202012Validator(POST), arguments)]


def test_each_failing_field_has_pointer_rule_and_type() -> None:
    found = failures({"body": {"content": "x", "tags": ["a", "b", "c", 4], "contexts": [{"origin": "o"}], "extra": None}})
    assert found == [
        ("/body/contexts/0/snippet", "required", "is required but missing"),
        ("/body/extra", "additionalProperties", "is not a known argument (got null)"),
        ("/body/tags/3", "type", 'must be of type "string"; got integer'),
    ]


def test_missing_body_and_unknown_group() -> None:
    assert failures({"bdy": {}}) == [
        ("/bdy", "additionalProperties", "is not a known argument (got object with 0 fields); did you mean /body?"),
        ("/body", "required", "is required but missing"),
    ]


def test_size_bounds_in_the_body_are_payload_too_large_as_in_rest() -> None:
    too_long = schema_failures(Draft202012Validator(POST), {"body": {"content": "x" * 8001}})
    assert [(f.field, f.rule, f.message) for f in too_long] == [
        ("/body/content", "maxLength", "must be at most 8000 characters; got string of 8001 characters")
    ]
    assert validation_error(too_long).code == "payload_too_large"
    mixed = schema_failures(Draft202012Validator(POST), {"body": {"content": "x" * 8001, "confidence": 2}})
    assert validation_error(mixed).code == "invalid_params"


def test_groups_sent_as_json_text_are_decoded_only_when_they_parse() -> None:
    assert decode_groups({"body": '{"content": "x"}'}, POST) == {"body": {"content": "x"}}
    assert decode_groups({"body": "not json"}, POST) == {"body": "not json"}
    assert decode_groups({"body": '"x"'}, {"properties": {"body": {"type": "string"}}}) == {"body": '"x"'}


def test_wrapped_exactly_where_the_catalog_wrapped() -> None:
    wrapped = {name for name, c in CATALOG.items() if is_wrapped(c["outputSchema"])}
    assert wrapped == {"getMemorySearch", "getMemoryHistory"}
    assert not is_wrapped({"type": "object", "properties": {"result": {"type": "object"}}, "required": ["result"]})
    assert not is_wrapped(None)
