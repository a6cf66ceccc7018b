"""House rules for the specs we write by hand (``openapi/*.yaml``).

The generated catalog is only as good as the spec: an agent picks a tool by its
name, summary and description, and handles failures by their problem documents.
So the generator refuses a spec that leaves any of these out. Third-party specs are
not linted; ``catalog_builder`` copes with them instead. Every issue names the
operation (or ``spec``) and the rule, so a failing ``regenerate-tools`` says exactly
what to fix.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from jsonschema import Draft202012Validator

from memory_bank_codegen.errors import SpecIssue
from memory_bank_codegen.loader import Operation, iter_operations, operation_parameters
from memory_bank_codegen.refs import deref
from memory_bank_codegen.schemas import to_json_schema

__all__ = ["lint_spec"]

MAX_OPERATION_ID = 64
#: Every operation is authenticated (401); one that takes input can also reject it (422).
AUTH_ERROR_STATUS = "401"
INPUT_ERROR_STATUS = "422"
PROBLEM_JSON = "application/problem+json"
_CAMEL_CASE = re.compile(r"^[a-z][a-zA-Z0-9]*$")
#: ``token:any`` (``memory_bank.api.auth.ANY_TOKEN``) is for operations every valid token may call.
_PERMISSION = re.compile(r"^(token:any|[a-z][a-z0-9_-]*:(read|write|admin))$")


Check = Callable[[Operation, dict[str, Any]], Iterator[tuple[str, str]]]


def _label(op: Operation) -> str:
    operation_id = op.operation.get("operationId")
    return operation_id if isinstance(operation_id, str) and operation_id else f"{op.method.upper()} {op.path}"


def _check_operation_id(op: Operation, spec: dict[str, Any]) -> Iterator[tuple[str, str]]:
    operation_id = op.operation.get("operationId")
    if not isinstance(operation_id, str) or not operation_id:
        yield "operation-id-present", "every operation needs an operationId (it becomes the tool name)"
        return
    if len(operation_id) > MAX_OPERATION_ID:
        yield "operation-id-length", f"{len(operation_id)} characters, at most {MAX_OPERATION_ID} (MCP tool-name limit)"
    if not _CAMEL_CASE.match(operation_id):
        yield "operation-id-camel-case", "use camelCase verb+noun, e.g. postMemory"


def _check_texts(op: Operation, spec: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for field, why in (("summary", "the tool title"), ("description", "what an agent reads to choose the tool")):
        value = op.operation.get(field)
        if not isinstance(value, str) or not value.strip():
            yield f"{field}-present", f"{field} is missing or empty; it is {why}"


def _check_capability(op: Operation, spec: dict[str, Any]) -> Iterator[tuple[str, str]]:
    declared = op.operation.get("x-capability")
    if not isinstance(declared, dict):
        yield "x-capability-present", "x-capability {category, permission, expose} is missing"
        return
    category = declared.get("category")
    if not isinstance(category, str) or not category.strip():
        yield "x-capability-category", "category must be a non-empty string, e.g. Memory"
    permission = declared.get("permission")
    if not isinstance(permission, str) or not _PERMISSION.match(permission):
        yield "x-capability-permission", f"permission {permission!r} is not <area>:read|write|admin (e.g. memory:read) or token:any"
    if not isinstance(declared.get("expose"), bool):
        yield "x-capability-expose", "expose must be true or false"
    examples = declared.get("examples", [])
    if not isinstance(examples, list) or not all(isinstance(e, str) and e.strip() for e in examples):
        yield "x-capability-examples", "examples must be a list of non-empty strings (requests an agent would make)"


def _check_errors(op: Operation, spec: dict[str, Any]) -> Iterator[tuple[str, str]]:
    responses = op.operation.get("responses")
    responses = {str(k): v for k, v in responses.items()} if isinstance(responses, dict) else {}
    takes_input = bool(op.operation.get("parameters") or op.path_item.get("parameters") or op.operation.get("requestBody"))
    required = (AUTH_ERROR_STATUS, INPUT_ERROR_STATUS) if takes_input else (AUTH_ERROR_STATUS,)
    missing = [status for status in required if status not in responses]
    if missing:
        yield "error-responses-declared", f"declare the error responses {', '.join(missing)}"
    for status, response in responses.items():
        if status[:1] not in ("4", "5"):
            continue
        content = (deref(spec, response) or {}).get("content")
        if not isinstance(content, dict) or PROBLEM_JSON not in content:
            yield "error-response-problem-json", f"response {status} must have {PROBLEM_JSON} content"


def _examples(holder: dict[str, Any], spec: dict[str, Any]) -> list[tuple[str, Any]]:
    """``(label, value)`` of a parameter's or media type's ``example`` and each of its ``examples``."""
    found = [("example", holder["example"])] if "example" in holder else []
    named = holder.get("examples")
    for name, entry in (named.items() if isinstance(named, dict) else ()):
        entry = deref(spec, entry) or {}
        if "value" in entry:
            found.append((f"examples.{name}", entry["value"]))
    return found


def _misfits(where: str, holder: dict[str, Any], spec: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Each example of ``holder`` that its own schema refuses, with the first reason."""
    examples = _examples(holder, spec)
    if not examples:
        return
    schema = holder.get("schema")
    validator = Draft202012Validator(to_json_schema(schema if isinstance(schema, dict) else {}, spec))
    for label, value in examples:
        error = next(iter(sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))), None)
        if error is not None:
            pointer = "".join(f"/{part}" for part in error.absolute_path) or "/"
            yield "example-valid", f"{where} {label} fails its schema at {pointer}: {error.message}"


def _contents(holder: Any, spec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    content = (deref(spec, holder) or {}).get("content")
    for media_type, media in (content.items() if isinstance(content, dict) else ()):
        if isinstance(media, dict):
            yield media_type, media


def _check_examples(op: Operation, spec: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """What Swagger UI's "Try it out" pre-fills, and what an agent copies, must be real and valid.

    Without an example Swagger UI invents one from the schema (``"string"``, a random
    match of a pattern), and running it unchanged stores that. Required parameters and
    request bodies need one; an optional parameter need not (a pre-filled optional filter
    would change what running the operation unchanged does). Every example given, on a
    parameter, a request or a response, must pass its own schema.
    """
    for param in operation_parameters(op, spec):
        where = f"{param['in']} parameter {param['name']!r}"
        if not _examples(param, spec) and (param["in"] == "path" or param.get("required") is True):
            yield "example-present", f"{where} needs an example: Swagger UI pre-fills it in Try it out"
        yield from _misfits(where, param, spec)
    for media_type, media in _contents(op.operation.get("requestBody"), spec):
        if not _examples(media, spec):
            yield "example-present", f"request body {media_type} needs an example: Swagger UI pre-fills it in Try it out"
        yield from _misfits(f"request body {media_type}", media, spec)
    responses = op.operation.get("responses")
    for status, response in (responses.items() if isinstance(responses, dict) else ()):
        for media_type, media in _contents(response, spec):
            yield from _misfits(f"response {status} {media_type}", media, spec)


_CHECKS: tuple[Check, ...] = (_check_operation_id, _check_texts, _check_capability, _check_errors, _check_examples)


def lint_spec(spec: dict[str, Any]) -> list[SpecIssue]:
    """Every house-rule violation in ``spec``, in operation order; empty means clean."""
    issues: list[SpecIssue] = []
    seen_ids: dict[str, str] = {}
    operations = list(iter_operations(spec))
    if not operations:
        issues.append(SpecIssue("spec", "operations-present", "the spec declares no operations"))
    for op in operations:
        label = _label(op)
        issues += (SpecIssue(label, rule, message) for check in _CHECKS for rule, message in check(op, spec))
        operation_id = op.operation.get("operationId")
        if isinstance(operation_id, str) and operation_id:
            where = f"{op.method.upper()} {op.path}"
            if operation_id in seen_ids:
                issues.append(
                    SpecIssue(label, "operation-id-unique", f"{where} reuses the operationId of {seen_ids[operation_id]}")
                )
            else:
                seen_ids[operation_id] = where
    return issues
