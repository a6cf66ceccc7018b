"""The spec's examples are real: valid by their own schemas, and accepted by the running server.

Swagger UI's "Try it out" pre-fills them (tests/test_browser_docs.py checks that), so
running an operation unchanged must do something sensible, never store ``"string"``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate

from memory_bank.generated.catalog import CAPABILITIES
from memory_bank.generated.spec import SPEC
from memory_bank.settings import Settings
from memory_bank_codegen.refs import deref as resolve_refs
from support.mcp_live import call_tool

METHODS = ("get", "put", "post", "delete", "patch")
ALL_PERMISSIONS = ("memory:read", "memory:write", "memory:admin")


def operations() -> list[tuple[str, str, dict[str, Any], list[dict[str, Any]]]]:
    """``(method, path, operation, parameters)`` in spec order, path-level parameters included."""
    found = []
    for path, item in SPEC["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                params = [deref(p) for p in item.get("parameters", []) + operation.get("parameters", [])]
                found.append((method, path, operation, params))
    return found


def deref(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj``, its ``$ref`` chain followed in the spec by the generator's own resolver."""
    target = resolve_refs(SPEC, obj)
    assert target is not None, obj
    return target


def fits(schema: dict[str, Any], value: Any) -> list[str]:
    """Why ``value`` fails ``schema`` (as the spec writes it, refs resolved in the spec); empty if it fits."""
    validator = Draft202012Validator({**schema, "components": SPEC["components"]})
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(value)]


def request_bodies(operation: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return operation.get("requestBody", {}).get("content", {})


OPERATIONS = operations()
IDS = [operation["operationId"] for _, _, operation, _ in OPERATIONS]


def test_the_spec_with_its_examples_is_valid_openapi_3_1() -> None:
    validate(SPEC)


@pytest.mark.parametrize(("method", "path", "operation", "params"), OPERATIONS, ids=IDS)
def test_every_request_example_is_present_and_fits_its_own_schema(
    method: str, path: str, operation: dict[str, Any], params: list[dict[str, Any]]
) -> None:
    for param in params:
        if param["in"] == "path" or param.get("required"):
            assert "example" in param, f"{param['name']} has no example"
        if "example" in param:
            assert fits(param["schema"], param["example"]) == [], param["name"]
    for media_type, media in request_bodies(operation).items():
        assert "example" in media, f"the {media_type} body has no example"
        assert fits(media["schema"], media["example"]) == [], media_type


@pytest.mark.parametrize(("method", "path", "operation", "params"), OPERATIONS, ids=IDS)
def test_every_response_example_fits_its_schema(method: str, path: str, operation: dict[str, Any], params: Any) -> None:
    for status, response in operation["responses"].items():
        for media_type, media in deref(response).get("content", {}).items():
            if "example" in media:
                assert fits(media["schema"], media["example"]) == [], (status, media_type)


def example_groups(params: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every parameter example by where it goes: ``{"path": {...}, "query": {...}, "header": {...}}``."""
    groups: dict[str, dict[str, Any]] = {"path": {}, "query": {}, "header": {}}
    for param in params:
        if "example" in param:
            groups[param["in"]][param["name"]] = param["example"]
    return groups


def example_request(method: str, path: str, operation: dict[str, Any], params: list[dict[str, Any]]) -> dict[str, Any]:
    """What Try it out sends when nothing is changed: every example, nothing else."""
    groups = example_groups(params)
    request: dict[str, Any] = {
        "method": method.upper(),
        "url": path.format(**groups["path"]),
        "params": groups["query"],
        "headers": groups["header"],
    }
    for media_type, media in request_bodies(operation).items():
        if media_type == "application/json":
            request["json"] = media["example"]
        else:
            request["content"] = media["example"]
            request["headers"]["Content-Type"] = media_type
    return request


def test_running_every_example_unchanged_is_accepted_by_the_server(make_client: Any) -> None:
    """In spec order: the save stores its example, and no example is refused as invalid (or fails).

    A read of something the examples never made (a deleted memory, say) may be 404 or 409.
    """
    ann: TestClient = make_client("acme", "ann", ALL_PERMISSIONS)
    statuses = {}
    for method, path, operation, params in OPERATIONS:
        response = ann.request(**example_request(method, path, operation, params))
        statuses[operation["operationId"]] = response.status_code
        refused = response.status_code in (400, 413, 422) or response.status_code >= 500
        assert not refused, (operation["operationId"], response.text)
        if operation["operationId"] == "postMemory":
            expected = request_bodies(operation)["application/json"]["example"]
            assert response.status_code == 201
            assert {k: response.json()[k] for k in expected} == expected
    # The import example is stored (under an id of the caller's own: import renames every id it
    # does not already own, so it tells nothing about other tenants); reads of the memory_id
    # example may then be 404, never refused.
    assert statuses["importMemories"] == 200
    assert statuses["putMemoryKeypath"] == 201 and statuses["getMemoryKeypath"] == 200


def example_arguments(operation: dict[str, Any], params: list[dict[str, Any]]) -> dict[str, Any]:
    """``execute_capability``'s arguments for the same unchanged example: its groups, named as the catalog names them."""
    arguments: dict[str, Any] = {"name": operation["operationId"]}
    arguments |= {where: values for where, values in example_groups(params).items() if values}
    json_body = request_bodies(operation).get("application/json")
    if json_body is not None:
        arguments["body"] = json_body["example"]
    return arguments


def test_every_exposed_operation_runs_its_example_through_execute_capability(
    app: Any, settings: Settings, make_token: Any
) -> None:
    """The MCP door, operation by operation: what the catalog exposes runs, so a new operation is covered by its spec.

    As over REST, a read of something the examples never made may be not_found or a conflict; no
    example is refused as invalid, and none fails.
    """
    exposed = {capability["name"] for capability in CAPABILITIES if capability["policy"]["expose"]}
    token = make_token("acme", "ann", ALL_PERMISSIONS)
    codes: dict[str, str | None] = {}
    with TestClient(app, base_url=settings.public_url) as client:
        for _, _, operation, params in OPERATIONS:
            if operation["operationId"] not in exposed:
                continue
            result = call_tool(client, token, "execute_capability", example_arguments(operation, params))
            codes[operation["operationId"]] = json.loads(result["content"][0]["text"])["code"] if result.get("isError") else None
    assert set(codes) == exposed
    refused = {name: code for name, code in codes.items() if code not in (None, "not_found", "conflict")}
    assert refused == {}
    assert codes["postMemory"] is None and codes["putMemoryKeypath"] is None and codes["getMemoryKeypath"] is None


#: Requests that share this much of their words (Jaccard of the casefolded word sets) are one
#: request reworded: "what did this note say before it was changed?" against "... edited?" is 0.8.
REWORDED = 0.8
#: Below this many words, two people asking the same thing ("list my memories") use the same words.
FEWEST_WORDS = 4
EVAL_SETS = sorted((Path(__file__).resolve().parents[1] / "evals" / "own_catalog").glob("*.jsonl"))


def words(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"\w+", text.casefold()))


def test_no_example_repeats_a_request_of_an_evaluation_set() -> None:
    """The examples are the spec author's, not the evaluation's: a request copied or reworded into
    them would be measured on itself (evals/own_catalog/README.md). Only ids are reported, so a
    sealed set's failure shows none of its requests."""
    assert EVAL_SETS
    requests = [
        (f"{path.name}:{row['id']}", words(row["query"]))
        for path in EVAL_SETS
        for row in map(json.loads, filter(str.strip, path.read_text(encoding="utf-8").splitlines()))
    ]
    repeated = [
        (capability["name"], position, where)
        for capability in CAPABILITIES
        for position, example in enumerate(capability.get("examples") or ())
        if len(own := words(example)) >= FEWEST_WORDS
        for where, theirs in requests
        if len(theirs) >= FEWEST_WORDS and len(own & theirs) >= REWORDED * len(own | theirs)
    ]
    assert repeated == [], "examples (operation, position) that repeat evaluation requests: " + repr(repeated)
