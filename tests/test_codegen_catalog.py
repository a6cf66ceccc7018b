"""Schema conversion and catalog building, on small made-up specs and on real third-party ones."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from memory_bank_codegen.catalog_builder import HEADER_VALUE_PATTERN, build_catalog, build_catalogs
from memory_bank_codegen.loader import load_spec
from memory_bank_codegen.refs import HTTP_METHODS
from memory_bank_codegen.schemas import to_json_schema
from support.requirements import need

REPO = Path(__file__).parents[1]
EVALS = REPO.parent / "shared" / "evals"
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def spec_of(paths: dict[str, Any] | None = None, **schemas: Any) -> dict[str, Any]:
    return {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": paths or {}, "components": {"schemas": schemas}}


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def valid(schema: dict[str, Any], instance: Any) -> bool:
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema).is_valid(instance)


# --- schemas: refs --------------------------------------------------------------------------------


def test_non_cyclic_refs_are_inlined() -> None:
    spec = spec_of(Name={"type": "string", "minLength": 1}, Person={"type": "object", "properties": {"name": ref("Name")}})
    assert to_json_schema(ref("Person"), spec) == {
        "type": "object",
        "properties": {"name": {"type": "string", "minLength": 1}},
    }


def test_self_referencing_schema_goes_to_defs_once() -> None:
    node = {"type": "object", "properties": {"value": {"type": "integer"}, "children": {"type": "array", "items": ref("Node")}}}
    spec = spec_of(Node=node, Tree={"type": "object", "properties": {"root": ref("Node")}})
    schema = to_json_schema(ref("Tree"), spec)
    assert schema["properties"]["root"] == {"$ref": "#/$defs/Node"}
    assert schema["$defs"]["Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert list(schema["$defs"]) == ["Node"]
    assert valid(schema, {"root": {"value": 1, "children": [{"value": 2, "children": []}]}})
    assert not valid(schema, {"root": {"value": 1, "children": [{"value": "two"}]}})


def test_mutual_recursion_terminates_and_validates() -> None:
    spec = spec_of(
        A={"type": "object", "properties": {"b": ref("B")}},
        B={"type": "object", "properties": {"a": ref("A"), "leaf": ref("Leaf")}},
        Leaf={"type": "string"},
    )
    schema = to_json_schema(ref("A"), spec)
    assert schema["$ref"] == "#/$defs/A"
    assert set(schema["$defs"]) == {"A", "B"}
    assert schema["$defs"]["B"]["properties"]["leaf"] == {"type": "string"}  # the non-cyclic leaf is inlined
    assert valid(schema, {"b": {"a": {"b": {"leaf": "x"}}}})
    assert not valid(schema, {"b": {"a": {"b": {"leaf": 1}}}})


def test_ref_to_a_ref_and_json_pointer_escapes() -> None:
    spec = spec_of(**{"a/b": {"type": "integer"}, "t~x": ref("a~1b")})
    assert to_json_schema(ref("t~0x"), spec) == {"type": "integer"}


def test_ref_siblings_win_over_the_target() -> None:
    spec = spec_of(Id={"type": "string", "description": "generic"})
    assert to_json_schema({**ref("Id"), "description": "specific"}, spec) == {"type": "string", "description": "specific"}


@pytest.mark.parametrize(
    "broken",
    ["#/components/schemas/Missing", "other.yaml#/Pet", "https://example.com/s.json", "#/paths/~1nowhere", "#/info/title"],
)
def test_unresolvable_refs_become_empty_schemas(broken: str) -> None:
    spec = spec_of(Box={"type": "object", "properties": {"x": {"$ref": broken}}})
    assert to_json_schema(ref("Box"), spec) == {"type": "object", "properties": {"x": {}}}


# --- schemas: OpenAPI 3.0 dialect -------------------------------------------------------------------


def test_nullable_adds_null_to_the_type() -> None:
    schema = to_json_schema({"type": "string", "nullable": True, "enum": ["a", "b"]}, spec_of())
    assert schema == {"type": ["string", "null"], "enum": ["a", "b", None]}
    assert valid(schema, None) and not valid(schema, "c")


def test_nullable_without_type_becomes_a_union() -> None:
    spec = spec_of(Pet={"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}})
    schema = to_json_schema({"allOf": [ref("Pet")], "nullable": True, "description": "maybe a pet"}, spec)
    assert schema["description"] == "maybe a pet"
    assert valid(schema, None) and valid(schema, {"name": "Rex"}) and not valid(schema, {})


def test_nullable_false_changes_nothing() -> None:
    assert to_json_schema({"type": "integer", "nullable": False}, spec_of()) == {"type": "integer"}


def test_boolean_exclusive_bounds_become_numbers() -> None:
    schema = to_json_schema(
        {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 1, "exclusiveMaximum": False}, spec_of()
    )
    assert schema == {"type": "number", "exclusiveMinimum": 0, "maximum": 1}


def test_openapi_only_keywords_are_dropped_but_properties_of_that_name_kept() -> None:
    schema = to_json_schema(
        {
            "type": "object",
            "example": {"a": 1},
            "xml": {"name": "x"},
            "externalDocs": {"url": "u"},
            "x-internal": True,
            "discriminator": {"propertyName": "kind"},
            "oneOf": [{"type": "object"}],
            "properties": {"example": {"type": "string", "format": "uri", "pattern": "^h", "default": "h"}},
        },
        spec_of(),
    )
    assert schema == {
        "type": "object",
        "oneOf": [{"type": "object"}],
        "properties": {"example": {"type": "string", "format": "uri", "pattern": "^h", "default": "h"}},
    }


def test_conversion_copies_instead_of_aliasing_the_spec() -> None:
    spec = spec_of(E={"type": "string", "enum": ["a"]})
    to_json_schema(ref("E"), spec)["enum"].append("b")
    assert spec["components"]["schemas"]["E"]["enum"] == ["a"]


# --- catalog: names, groups, policy ------------------------------------------------------------------


def op(**extra: Any) -> dict[str, Any]:
    return {"responses": {"204": {"description": "done"}}, **extra}


def test_names_are_derived_when_operation_id_is_missing_or_invalid() -> None:
    long_a = "/" + "/".join(["segment"] * 12) + "/{itemId}/a"
    long_b = "/" + "/".join(["segment"] * 12) + "/{itemId}/b"
    spec = spec_of(
        {
            "/pets/{petId}": {"get": op(), "delete": op(operationId="remove pet!")},
            "/": {"get": op()},
            long_a: {"get": op()},
            long_b: {"get": op()},
        }
    )
    names = [c["name"] for c in build_catalog(spec, default_expose=True)]
    assert names[:3] == ["getPetsByPetId", "remove_pet", "getRoot"]
    assert all(TOOL_NAME.match(n) for n in names) and len(set(names)) == len(names)
    assert [c["name"] for c in build_catalog(spec, default_expose=True)] == names  # stable
    assert build_catalog(spec, default_expose=True)[0]["title"] == "Get pets by petId"


def test_duplicate_names_within_one_spec_get_a_counter() -> None:
    spec = spec_of({"/a": {"get": op(operationId="fetch")}, "/b": {"get": op(operationId="fetch")}})
    assert [c["name"] for c in build_catalog(spec, default_expose=True)] == ["fetch", "fetch_2"]


def test_collisions_across_specs_are_prefixed_with_the_source() -> None:
    spec = spec_of({"/a": {"get": op(operationId="listAccount")}})
    merged = build_catalogs(
        [("first.json", spec), ("specs/twilio_api_v2010.json", spec), ("other/twilio_api_v2010.json", spec)],
        default_expose=True,
    )
    assert [c["name"] for c in merged] == [
        "listAccount",
        "twilio_api_v2010__listAccount",
        "twilio_api_v2010__listAccount_2",
    ]
    assert [c["source"] for c in merged] == ["first.json", "specs/twilio_api_v2010.json", "other/twilio_api_v2010.json"]


def test_expose_follows_x_capability_then_the_default() -> None:
    spec = spec_of(
        {
            "/a": {
                "get": op(operationId="hidden", **{"x-capability": {"expose": False}}),
                "post": op(operationId="shown", **{"x-capability": {"expose": True, "permission": "billing:admin"}}),
                "delete": op(operationId="plain", tags=["Things"]),
            }
        }
    )
    assert [c["name"] for c in build_catalog(spec)] == ["shown"]
    catalog = build_catalog(spec, default_expose=True)
    assert [c["name"] for c in catalog] == ["shown", "plain"]
    assert [c["policy"] for c in catalog] == [
        {"category": "General", "permission": "billing:admin", "expose": True},
        {"category": "Things", "permission": "memory:write", "expose": True},
    ]
    assert catalog[1]["annotations"] == {
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": True,
        "openWorldHint": False,
    }


def test_examples_come_from_x_capability_and_junk_is_dropped() -> None:
    declared = {"expose": True, "examples": [" remember that I like tea ", "", 3, "save a note"]}
    spec = spec_of(
        {
            "/a": {"post": op(operationId="given", **{"x-capability": declared})},
            "/b": {"get": op(operationId="none"), "put": op(operationId="junk", **{"x-capability": {"examples": "one"}})},
        }
    )
    by_name = {c["name"]: c["examples"] for c in build_catalog(spec, default_expose=True)}
    assert by_name == {"given": ["remember that I like tea", "save a note"], "none": [], "junk": []}


def test_each_capability_carries_what_the_spec_says_about_its_api() -> None:
    spec = spec_of({"/a": {"get": op(operationId="one", tags=["Cats", "Plain"])}, "/b": {"get": op(operationId="two")}})
    spec["info"] |= {"title": " Cataas ", "summary": "Cats as a service", "description": "Random cat pictures."}
    spec["servers"] = [{"url": "https://a", "description": "Production"}, {"url": "https://b"}, {"url": "https://c", "description": "Production"}]
    spec["tags"] = [{"name": "Cats", "description": "Cat managing"}, {"name": "Plain"}, {"name": "Other", "description": "Unused"}]
    one, two = build_catalog(spec, default_expose=True)
    api = {"title": "Cataas", "summary": "Cats as a service", "description": "Random cat pictures.", "servers": ["Production"]}
    assert one["api"] == api | {"tags": {"Cats": "Cat managing"}}  # only this operation's described tags
    assert two["api"] == api | {"tags": {}}
    one["api"]["servers"].append("mutated")
    assert two["api"]["servers"] == ["Production"]  # no list shared between entries
    bare = build_catalog({"openapi": "3.0.3", "info": "junk", "paths": {"/x": {"get": op()}}}, default_expose=True)
    assert bare[0]["api"] == {"title": "", "summary": "", "description": "", "servers": [], "tags": {}}


def test_input_groups_merge_path_level_parameters_and_skip_auth_headers() -> None:
    spec = spec_of(
        {
            "/items/{id}": {
                "parameters": [
                    {"name": "id", "in": "path", "schema": {"type": "string"}, "description": "path level"},
                    {"name": "verbose", "in": "query", "schema": {"type": "boolean"}},
                ],
                "put": op(
                    parameters=[
                        {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}},
                        {"name": "Authorization", "in": "header", "schema": {"type": "string"}},
                        {"name": "session", "in": "cookie", "schema": {"type": "string"}},
                        {"name": "If-Match", "in": "header", "required": True, "schema": {"type": "string"}},
                    ],
                    requestBody={"content": {"application/x-ndjson": {}}},
                ),
            }
        }
    )
    schema = build_catalog(spec, default_expose=True)[0]["inputSchema"]
    assert list(schema["properties"]) == ["path", "query", "header", "body"]
    assert schema["properties"]["path"]["properties"] == {"id": {"type": "integer"}}  # operation level wins
    assert schema["properties"]["header"]["properties"] == {"If-Match": {"type": "string", "pattern": HEADER_VALUE_PATTERN}}
    assert schema["properties"]["body"] == {"type": "string"}
    assert schema["required"] == ["path", "header"]  # the body is optional, the query has nothing required
    assert all(schema["properties"][g]["additionalProperties"] is False for g in ("path", "query", "header"))
    assert valid(schema, {"path": {"id": 1}, "header": {"If-Match": "x"}})
    assert not valid(schema, {"path": {"id": 1}, "header": {"If-Match": "x"}, "cookie": {}})


def test_cyclic_body_defs_sit_at_the_input_schema_root() -> None:
    spec = spec_of(
        {"/trees": {"post": op(requestBody={"required": True, "content": {"application/json": {"schema": ref("Node")}}})}},
        Node={"type": "object", "properties": {"kids": {"type": "array", "items": ref("Node")}}},
    )
    schema = build_catalog(spec, default_expose=True)[0]["inputSchema"]
    assert schema["properties"]["body"] == {"$ref": "#/$defs/Node"} and "Node" in schema["$defs"]
    assert schema["required"] == ["body"]
    assert valid(schema, {"body": {"kids": [{"kids": []}]}}) and not valid(schema, {"body": {"kids": [1]}})


def test_output_schema_is_wrapped_unless_an_object_and_none_without_json() -> None:
    listing = {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "array", "items": {}}}}}}
    text = {"200": {"description": "ok", "content": {"text/plain": {"schema": {"type": "string"}}}}}
    spec = spec_of({"/a": {"get": op(responses=listing), "post": op(responses=text), "delete": op()}})
    outputs = [c["outputSchema"] for c in build_catalog(spec, default_expose=True)]
    assert outputs == [
        {"type": "object", "properties": {"result": {"type": "array", "items": {}}}, "required": ["result"]},
        None,
        None,
    ]


# --- catalog: the memory spec ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def memory_catalog() -> list[dict[str, Any]]:
    return build_catalog(load_spec(REPO / "openapi" / "memory.yaml"), source="memory")


def test_memory_spec_exposes_what_it_marks_exposed_and_never_the_transfer(memory_catalog: list[dict[str, Any]]) -> None:
    operations = [
        operation
        for item in load_spec(REPO / "openapi" / "memory.yaml")["paths"].values()
        for method, operation in item.items()
        if method in HTTP_METHODS
    ]
    exposed = {operation["operationId"] for operation in operations if operation["x-capability"]["expose"]}
    assert {c["name"] for c in memory_catalog} == exposed
    assert exposed.isdisjoint({"exportMemories", "importMemories", "searchCapabilities"})
    for capability in memory_catalog:
        Draft202012Validator.check_schema(capability["inputSchema"])
        assert "$ref" not in json.dumps(capability), "the memory spec has no cycles: everything inlines"


def test_memory_spec_shapes(memory_catalog: list[dict[str, Any]]) -> None:
    by_name = {c["name"]: c for c in memory_catalog}
    post = by_name["postMemory"]
    assert list(post["inputSchema"]["properties"]) == ["header", "body"]
    assert post["inputSchema"]["required"] == ["body"]
    assert list(post["inputSchema"]["properties"]["header"]["properties"]) == ["Idempotency-Key"]
    assert valid(post["inputSchema"], {"body": {"content": "The user prefers vim", "tags": ["editor"]}})
    assert not valid(post["inputSchema"], {"body": {"content": ""}})
    search = by_name["getMemorySearch"]["outputSchema"]
    assert search["required"] == ["results"] and search["properties"]["results"]["type"] == "array"
    assert "score" in search["properties"]["results"]["items"]["required"]
    assert by_name["getMemory"]["inputSchema"]["required"] == ["path"]
    assert by_name["deleteMemory"]["outputSchema"] is None
    assert by_name["getMemory"]["policy"] == {"category": "Memory", "permission": "memory:read", "expose": True}


# --- catalog: real third-party specs ------------------------------------------------------------------


def eval_specs(folder: str, pattern: str) -> list[Path]:
    """The shared eval specs; skipped when the data is absent, except in CI, where that is a failure."""
    files = sorted((EVALS / folder).glob(pattern))
    need("the catalog checks on real specs", bool(files), f"no eval specs at {EVALS / folder}", "check out the shared eval data")
    return files


def operation_count(spec: dict[str, Any]) -> int:
    return sum(1 for item in spec["paths"].values() for method in HTTP_METHODS if isinstance(item.get(method), dict))


@pytest.mark.evals
@pytest.mark.parametrize(
    ("folder", "pattern", "spec_count", "total"),
    [("toolalpaca/specs", "*.json", 21, 94), ("large-specs/twilio", "*.json", 55, 1447)],
)
def test_real_specs_build_into_one_valid_registry(folder: str, pattern: str, spec_count: int, total: int) -> None:
    specs = [(path.name, load_spec(path)) for path in eval_specs(folder, pattern)]
    assert len(specs) == spec_count
    catalog = build_catalogs(specs, default_expose=True)

    assert len(catalog) == total == sum(operation_count(spec) for _, spec in specs)
    for source, spec in specs:
        assert sum(c["source"] == source for c in catalog) == operation_count(spec), source
    names = [c["name"] for c in catalog]
    assert len(set(names)) == len(names)
    assert all(TOOL_NAME.match(n) for n in names), [n for n in names if not TOOL_NAME.match(n)]
    for capability in catalog:
        Draft202012Validator.check_schema(capability["inputSchema"])
        if capability["outputSchema"] is not None:
            Draft202012Validator.check_schema(capability["outputSchema"])
            assert capability["outputSchema"]["type"] == "object"
    assert json.dumps(catalog) == json.dumps(build_catalogs(specs, default_expose=True))
