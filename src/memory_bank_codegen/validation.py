"""The spec checked against the OpenAPI specification itself (``openapi-spec-validator``).

It runs after the ref check (the validator recurses through a ref loop until Python's
stack runs out) and before the house lint, whose rules assume a well-formed document.
Each error is placed on the operation it is inside, like every other issue.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openapi_spec_validator.shortcuts import get_validator_cls
from openapi_spec_validator.versions.exceptions import OpenAPIVersionNotFound

from memory_bank_codegen.errors import SpecIssue
from memory_bank_codegen.refs import HTTP_METHODS

__all__ = ["RULE", "openapi_issues"]

#: The rule every finding of the validator is reported under.
RULE = "openapi-spec"


def _where(spec: dict[str, Any], location: Sequence[Any]) -> str:
    """The operation an error sits in (its operationId, else ``METHOD /path``), else ``spec``."""
    if len(location) >= 3 and location[0] == "paths" and location[2] in HTTP_METHODS:
        path, method = str(location[1]), str(location[2])
        operation = spec["paths"].get(path, {}).get(method, {})
        operation_id = operation.get("operationId") if isinstance(operation, dict) else None
        return operation_id if isinstance(operation_id, str) else f"{method.upper()} {path}"
    return str(location[1]) if len(location) >= 2 and location[0] == "paths" else "spec"


def openapi_issues(spec: dict[str, Any]) -> list[SpecIssue]:
    """What the OpenAPI specification's own schema and rules refuse in ``spec``; empty when valid."""
    try:
        validator = get_validator_cls(spec)(spec)
    except OpenAPIVersionNotFound as exc:
        return [SpecIssue("spec", RULE, str(exc))]
    issues = []
    for error in validator.iter_errors():
        location = list(error.absolute_path)
        pointer = "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in location) or "/"
        reason = error.message.split("\n", 1)[0]  # the rest repeats the schema and the instance
        issues.append(SpecIssue(_where(spec, location), RULE, f"at {pointer}: {reason}"))
    return issues
