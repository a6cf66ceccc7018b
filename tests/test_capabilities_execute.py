"""The checks execute_capability makes before dispatching: pointers, rules, types, hints, wrapping, JSON text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import reduce

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from memory_bank.api.problems import validation_error
from memory_bank.capabilities.execute.dispatch import ROUTES
from memory_bank.capabilities.execute.outcome import is_wrapped, response_outcome
from memory_bank.capabilities.execute.validation import ArgumentSchema, decode_groups, schema_failures
from memory_bank.errors import json_pointer
from memory_bank.generated.catalog import CAPABILITIES
from memory_bank.generated.spec import SPEC

CATALOG = {c["name"]: c for c in CAPABILITIES if c["policy"]["expose"]}
POST = CATALOG["postMemory"]["inputSchema"]


def failures(arguments: dict) -> list[tuple[str, str, str]]:
    return [(f.field, f.rule, f.message) for f in schema_failures(Draft202012Validator(POST), arguments)]


def test_each_failing_field_has_pointer_rule_and_type() -> None:
    found = failures({"body": {"content": "x", "tags": ["a", "b", "c", 4], "contexts": [{"origin": "o"}], "extra": None}})
    assert found == [
        ("/body/contexts/0/snippet", "required", "is required but missing"),
        ("/body/extra", "additionalProperties", "is not a known argument (got null)"),
        ("/body/tags/3", "type", 'must be of type "string"; got integer 4'),
    ]


def test_a_scalar_out_of_its_bound_is_quoted_back_unless_it_is_long() -> None:
    search = Draft202012Validator(CATALOG["getMemorySearch"]["inputSchema"])
    said = {
        repr(limit): [f.message for f in schema_failures(search, {"query": {"q": "x", "limit": limit}})]
        for limit in (500, 10**60, 2.5, True)
    }
    assert said["500"] == ["must be <= 100; got integer 500"]
    assert said[repr(10**60)] == ["must be <= 100; got integer of 61 digits"]
    assert said["2.5"] == ['must be of type "integer"; got number 2.5']
    assert said["True"] == ['must be of type "integer"; got boolean true']


def test_missing_body_and_unknown_group() -> None:
    assert failures({"bdy": {}}) == [
        ("/bdy", "additionalProperties", "is not a known argument (got object with 0 fields); did you mean /body?"),
        ("/body", "required", "is required but missing"),
    ]


def test_size_bounds_in_the_body_are_invalid_params_as_in_rest() -> None:
    too_long = schema_failures(Draft202012Validator(POST), {"body": {"content": "x" * 8001}})
    assert [(f.field, f.rule, f.message) for f in too_long] == [
        ("/body/content", "maxLength", "must be at most 8000 characters; got string of 8001 characters")
    ]
    assert validation_error(too_long).code == "invalid_params"
    mixed = schema_failures(Draft202012Validator(POST), {"body": {"content": "x" * 8001, "confidence": 2}})
    assert validation_error(mixed).code == "invalid_params"


def test_groups_sent_as_json_text_are_decoded_only_when_they_parse() -> None:
    assert decode_groups({"body": '{"content": "x"}'}, POST) == {"body": {"content": "x"}}
    assert decode_groups({"body": "not json"}, POST) == {"body": "not json"}
    assert decode_groups({"body": '"x"'}, {"properties": {"body": {"type": "string"}}}) == {"body": '"x"'}


def test_nulls_and_empty_groups_the_operation_lacks_are_left_out() -> None:
    get = CATALOG["getMemory"]["inputSchema"]
    assert decode_groups({"path": {"memory_id": "m"}, "query": {}, "body": "{}", "header": None}, get) == {"path": {"memory_id": "m"}}
    assert decode_groups({"body": {}, "header": {}}, POST) == {"body": {}, "header": {}}  # groups it has: checked as sent
    assert decode_groups({"body": '{"content": "x", "tags": null}', "header": {"Idempotency-Key": None}}, POST) == {
        "body": {"content": "x"},
        "header": {},
    }


def test_wrapped_exactly_where_the_catalog_wrapped() -> None:
    wrapped = {name for name, c in CATALOG.items() if is_wrapped(c["outputSchema"])}
    assert wrapped == {"getMemoryHistory"}
    assert not is_wrapped({"type": "object", "properties": {"result": {"type": "object"}}, "required": ["result"]})
    assert not is_wrapped(None)


# -- where a misplaced argument belongs (read off each operation's own input schema) --------


def defined_places(schema: dict, at: tuple = ()) -> Iterator[tuple[str, tuple]]:
    """Every (property name, location) an input schema defines; array items at index 0."""
    for name, member in (schema.get("properties") or {}).items():
        yield name, (*at, name)
        yield from defined_places(member, (*at, name))
    if isinstance(schema.get("items"), dict):
        yield from defined_places(schema["items"], (*at, 0))


def objects_in(schema: dict, at: tuple = ()) -> Iterator[tuple]:
    """The locations of every object (with properties) an argument could be sent into."""
    if schema.get("properties"):
        yield at
        for name, member in schema["properties"].items():
            yield from objects_in(member, (*at, name))


def nest(at: tuple, value: object) -> object:
    for part in reversed(at):
        value = {part: value}
    return value


PLACES = [(name, leaf, where) for name, c in CATALOG.items() for leaf, where in defined_places(c["inputSchema"])]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(PLACES), st.data())
def test_an_argument_sent_at_the_wrong_level_is_told_where_it_belongs(place: tuple, data: st.DataObject) -> None:
    operation, name, where = place
    schema = CATALOG[operation]["inputSchema"]
    holders = [at for at in objects_in(schema) if at != where[:-1]]
    wrong = data.draw(st.sampled_from(holders))
    defined_here = name in reduce(lambda node, part: node["properties"][part], wrong, schema)["properties"]
    assume(not defined_here)
    found = {f.field: f for f in schema_failures(Draft202012Validator(schema), nest((*wrong, name), "x"))}
    failure = found[json_pointer([*wrong, name])]
    assert failure.rule == "additionalProperties"
    assert json_pointer(where) in failure.message.partition("did you mean ")[2], failure.message


GROUPS = [(name, group) for name, c in CATALOG.items() for group, g in c["inputSchema"]["properties"].items() if g.get("properties")]


@given(st.sampled_from(GROUPS), st.text(min_size=1, max_size=60).filter(lambda t: not t.strip().startswith(("{", "[", '"'))))
def test_a_bare_value_where_a_group_goes_is_shown_the_group_it_belongs_in(target: tuple[str, str], text: str) -> None:
    operation, group = target
    schema = CATALOG[operation]["inputSchema"]
    arguments = decode_groups({group: text}, schema)
    found = {f.field: f for f in schema_failures(Draft202012Validator(schema), arguments)}
    members = schema["properties"][group]
    expected = (members.get("required") or list(members["properties"]))[0]
    message = found[f"/{group}"].message
    assert message.startswith('must be of type "object", e.g. {') and json.dumps(expected) in message, message


def test_the_two_misplacements_agents_make_most() -> None:
    flat = failures({"content": "The user edits with Helix"})
    assert ("/content", "additionalProperties", "is not a known argument (got string of 25 characters); did you mean /body/content?") in flat
    search = CATALOG["getMemorySearch"]["inputSchema"]
    [bare] = schema_failures(Draft202012Validator(search), {"query": "helix editor"})
    assert (bare.field, bare.message) == ("/query", 'must be of type "object", e.g. {"q": "helix editor"}; got string of 12 characters')


def test_a_misspelt_argument_is_offered_its_neighbour() -> None:
    assert ("/body/tag", "additionalProperties", "is not a known argument (got array of 1 item); did you mean /body/tags?") in failures(
        {"body": {"content": "x", "tag": ["a"]}}
    )


def test_hints_follow_references_and_stop_at_cycles() -> None:
    node = {"type": "object", "additionalProperties": False, "properties": {"label": {"type": "string"}, "child": {"$ref": "#/$defs/Node"}}}
    schema = {"type": "object", "additionalProperties": False, "properties": {"body": {"$ref": "#/$defs/Node"}}, "$defs": {"Node": node}}
    [misplaced] = schema_failures(Draft202012Validator(schema), {"label": "x"})
    assert misplaced.message == "is not a known argument (got string of 1 character); did you mean /body/label?"
    [bare] = schema_failures(Draft202012Validator(schema), {"body": {"child": "x"}})
    assert bare.message == 'must be of type "object", e.g. {"label": "x"}; got string of 1 character'


def test_a_wrapper_around_the_groups_is_told_to_drop_it() -> None:
    assert failures({"arguments": {"body": {"content": "x"}}}) == [
        ("/arguments", "additionalProperties", "is not a known argument (got object with 1 field); did you mean /body, without the wrapper?"),
        ("/body", "required", "is required but missing"),
    ]


def test_arguments_in_a_group_the_operation_has_not_are_told_where_each_belongs() -> None:
    """Search terms sent as a body (a search has no body): the group alone was named unknown."""
    search, get = CATALOG["getMemorySearch"]["inputSchema"], CATALOG["getMemory"]["inputSchema"]
    [misplaced] = schema_failures(Draft202012Validator(search), {"body": {"q": "window", "limit": 3}})
    assert misplaced.message == "is not a known argument (got object with 2 fields); did you mean /query/q, /query/limit?"
    found = {f.field: f.message for f in schema_failures(Draft202012Validator(get), {"query": {"memory_id": "mem_x"}})}
    assert found["/query"].endswith("did you mean /path/memory_id?")
    unknown = {f.field: f.message for f in schema_failures(Draft202012Validator(CATALOG["postMemory"]["inputSchema"]), {"query": {"nothing": "x"}})}
    assert unknown["/query"] == "is not a known argument (got object with 1 field)"  # nothing fits: no guess


def test_json_lines_are_not_taken_for_one_json_value() -> None:
    """``application/x-ndjson`` is text (one JSON value per line), so a JSON-lines reply is handed over as it came."""
    lines = b'{"id": "a", "content": "one"}\n{"id": "b", "content": "two"}\n'
    outcome = response_outcome(200, {"content-type": "application/x-ndjson"}, lines, None)
    assert (outcome.structured, outcome.text, outcome.is_error) == (None, lines.decode(), False)
    problem = b'{"type": "about:blank", "title": "Not Found", "status": 404, "detail": "x", "code": "not_found"}'
    assert response_outcome(404, {"content-type": "application/problem+json"}, problem, None).error_code == "not_found"


def test_the_json_lines_operations_are_not_capabilities() -> None:
    """Export and import speak JSON lines and are advertised with ``expose: false``: the execute path never sends
    or receives a JSON-lines body (a tool argument is JSON, and a 32 MiB import is not a tool call)."""
    names = {capability["name"] for capability in CAPABILITIES if capability["policy"]["expose"]}
    assert {"exportMemories", "importMemories"}.isdisjoint(names)
    media_types = {
        media
        for item in SPEC["paths"].values()
        for operation in item.values()
        if isinstance(operation, dict) and operation.get("operationId") in names
        for part in [operation.get("requestBody", {}), *operation.get("responses", {}).values()]
        for media in part.get("content", {})
    }
    assert "application/x-ndjson" not in media_types


#: Any JSON value, for where a call sends something other than what the schema wants.
ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
#: Strings near the edges the catalog's bounds and patterns draw: lengths, whitespace of every kind, newlines.
WHITESPACE = " \t\n\x1c\x1f\x85\xa0\u2028\ufeff"
EDGE_TEXT = (
    st.text(alphabet=st.sampled_from(WHITESPACE), min_size=1, max_size=4)
    | st.text(alphabet=st.sampled_from("aZ09_-" + WHITESPACE), max_size=24)
    | st.text(max_size=24)
)


def near(schema: dict) -> st.SearchStrategy[object]:
    """Values shaped by ``schema``, some just inside its bounds, some just outside, some of another type."""
    kind = schema.get("type")
    guided: st.SearchStrategy[object]
    if kind == "object" or "properties" in schema:
        members = {name: near(member) for name, member in (schema.get("properties") or {}).items()}
        required = {name: members.pop(name) for name in schema.get("required") or () if name in members}
        guided = st.fixed_dictionaries(required, optional={**members, "unexpected": ANY_JSON})
    elif kind == "array":
        guided = st.lists(near(schema.get("items") or {}), max_size=(schema.get("maxItems") or 3) + 1)
    elif kind == "string":
        guided = st.sampled_from(schema["enum"]) | EDGE_TEXT if "enum" in schema else EDGE_TEXT
        if "maxLength" in schema:
            guided |= st.sampled_from(["x" * schema["maxLength"], "x" * (schema["maxLength"] + 1)])
    elif kind in ("integer", "number"):
        low, high = schema.get("minimum", -5), schema.get("maximum", 5)
        guided = st.integers(int(low) - 1, int(high) + 1) | st.floats(low - 1, high + 1) | st.sampled_from([float(low), 10**30])
    else:
        guided = ANY_JSON
    return guided | ANY_JSON


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(sorted(CATALOG)), st.data())
def test_the_compiled_check_finds_exactly_what_jsonschema_finds(name: str, data: st.DataObject) -> None:
    """The compiled validator only decides whether to walk: its answer never differs from jsonschema's."""
    schema = CATALOG[name]["inputSchema"]
    arguments = data.draw(near(schema))
    assert ArgumentSchema(schema).failures(arguments) == schema_failures(Draft202012Validator(schema), arguments)


def test_the_route_table_holds_every_operation_of_the_spec_once_where_the_catalog_sends_it() -> None:
    operations = [(method.upper(), path, op["operationId"]) for path, item in SPEC["paths"].items()
                  for method, op in item.items() if isinstance(op, dict) and "operationId" in op]
    assert sorted(ROUTES) == sorted(name for _, _, name in operations)
    assert all(ROUTES[name] == (method, path) for method, path, name in operations)
    assert all(ROUTES[c["name"]] == (c["method"], c["path"]) for c in CAPABILITIES)
