"""Execute a capability: check the arguments, then call the app itself, in process.

An MCP call must be a REST call, not a second implementation: after the arguments
pass the capability's advertised ``inputSchema`` they become an HTTP request that is
dispatched into the same ASGI app (``httpx.ASGITransport``, no socket) with the
caller's own bearer token. Authentication, permissions, rate limits, audit,
validation, handlers and error mapping are therefore exactly the REST ones, and a
failure comes back as the same problem document, whose ``code`` the tool result
carries.

The schema check here is not a second validator of record: it exists so a failure
names the argument as the agent sent it (``/body/tags/3``), with the JSON Schema
keyword it broke and the type it got, before anything is dispatched.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
from jsonschema import Draft202012Validator, ValidationError
from starlette.types import ASGIApp

from memory_bank.capabilities.execute.argument_hints import object_example, where_it_belongs
from memory_bank.capabilities.registry import CapabilityRegistry
from memory_bank.errors import ApiError, ErrorCode, FieldError
from memory_bank.generated.spec import SPEC
from memory_bank.problems import STATUS_CODES, json_pointer, validation_error
from memory_bank.runtime import Principal

__all__ = [
    "Call",
    "Caller",
    "Executor",
    "Outcome",
    "Refusal",
    "decode_groups",
    "is_wrapped",
    "problem_for_agent",
    "schema_failures",
]

Capability = Mapping[str, Any]

#: Argument groups as the catalog's inputSchema lays them out.
GROUPS = ("path", "query", "header", "body")

#: Where in-process requests are addressed; never resolved, never leaves the process.
INTERNAL_BASE_URL = "http://memory-bank.internal"

#: How a broken keyword reads in a message; ``{}`` is the schema's bound.
_PHRASES: dict[str, str] = {
    "type": "must be of type {}",
    "enum": "must be one of {}",
    "const": "must be {}",
    "pattern": "must match the pattern {}",
    "minLength": "must be at least {} characters",
    "maxLength": "must be at most {} characters",
    "minItems": "must have at least {} items",
    "maxItems": "must have at most {} items",
    "minProperties": "must have at least {} fields",
    "maxProperties": "must have at most {} fields",
    "minimum": "must be >= {}",
    "maximum": "must be <= {}",
    "exclusiveMinimum": "must be > {}",
    "exclusiveMaximum": "must be < {}",
    "multipleOf": "must be a multiple of {}",
    "uniqueItems": "must not repeat items",
}


@dataclass(frozen=True)
class Caller:
    """Who a tool call acts for.

    ``token`` is forwarded into the app so the REST layer authenticates the call
    itself (a token revoked mid-session stops working at once); ``principal`` is what
    that token resolved to when the MCP request arrived, used only to decide which
    tools to show.
    """

    token: str
    principal: Principal
    request_id: str | None = None


@dataclass(frozen=True)
class Outcome:
    """A tool call's result, independent of the MCP transport that renders it.

    On success ``structured`` is the operation's JSON object and ``text`` its copy for
    clients that read only text. A failure carries its problem document as ``text``
    alone: a tool's ``outputSchema`` describes its result, not a problem, and clients
    that check structured content against it (the TypeScript SDK, the Inspector)
    reject a result whose structured content does not match, so the agent would
    never see why its call failed. ``error_code`` is the problem's ``code``.
    """

    structured: dict[str, Any] | None
    text: str
    error_code: str | None = None

    @property
    def is_error(self) -> bool:
        return self.error_code is not None

    @classmethod
    def failure(cls, error: ApiError) -> Outcome:
        return cls.of_problem(problem_for_agent(error))

    @classmethod
    def of_problem(cls, problem: dict[str, Any]) -> Outcome:
        return cls(None, json.dumps(problem, ensure_ascii=False), error_code=str(problem.get("code")))


def with_retry_hint(problem: dict[str, Any], retry_after: str | None) -> dict[str, Any]:
    """The problem with ``retry_after_seconds`` when a ``Retry-After`` (in seconds) came with it.

    An MCP result has no headers, so the wait a REST client reads from the header
    (a spent budget, a limiter that is down) travels in the problem itself.
    """
    if retry_after is None or not retry_after.isdigit():
        return problem
    return {**problem, "retry_after_seconds": int(retry_after)}


def problem_for_agent(error: ApiError) -> dict[str, Any]:
    """``error`` as an MCP client receives it: its problem document, with its retry hint."""
    return with_retry_hint(error.problem(), error.headers.get("Retry-After"))


@dataclass(frozen=True)
class Call:
    """A tool call whose arguments passed its checks: the in-process REST request it becomes."""

    method: str
    path: str
    arguments: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Refusal:
    """A tool call answered before any REST route sees it.

    ``metered``: the call counts against the org's budget as an admitted request
    (bad arguments, an unknown name), except when refused for permission, which
    REST does not charge either.
    """

    error: ApiError
    metered: bool = True


def _json_type(value: Any) -> str:
    """The JSON type of ``value`` with its size where a size bound could be the issue."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return f"string of {len(value)} characters"
    if isinstance(value, list):
        return f"array of {len(value)} items"
    return f"object with {len(value)} fields"


def _field_errors(error: ValidationError, root: Mapping[str, Any]) -> list[FieldError]:
    """One jsonschema error as pointers to the arguments at fault, with the fix where the schema shows it.

    ``required`` and ``additionalProperties`` fail on the parent object; they are
    reported at the missing or unexpected member, as REST reports them. An unknown
    member says where that name belongs; a bare value where an object goes says what
    the object holds (``argument_hints``).
    """
    where, rule, value = list(error.absolute_path), str(error.validator), error.instance
    if rule == "required" and isinstance(value, dict) and isinstance(error.validator_value, list):
        missing = [name for name in error.validator_value if name not in value]
        return [FieldError(json_pointer([*where, name]), rule, "is required but missing") for name in missing]
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    if rule == "additionalProperties" and isinstance(value, dict) and "patternProperties" not in schema:
        known = list(schema.get("properties") or {})
        return [
            FieldError(
                json_pointer([*where, name]),
                rule,
                f"is not a known argument (got {_json_type(value[name])}){where_it_belongs(root, name, value[name], where, known)}",
            )
            for name in value
            if name not in known
        ]
    phrase = _PHRASES.get(rule, "fails " + rule).format(json.dumps(error.validator_value))
    example = object_example(schema, root, value) if rule == "type" and error.validator_value == "object" else ""
    hint = f", e.g. {example}" if example else ""
    return [FieldError(json_pointer(where), rule, f"{phrase}{hint}; got {_json_type(value)}")]


def _pointer_order(failure: FieldError) -> list[tuple[int, int | str]]:
    """Sort key: pointer segments in order, array indexes numerically (``/tags/2`` before ``/tags/10``)."""
    return [(0, int(part)) if part.isdigit() else (1, part) for part in failure.field.split("/")]


def schema_failures(validator: Draft202012Validator, instance: Any) -> list[FieldError]:
    """Every way ``instance`` breaks the schema, ordered by pointer, each reported once."""
    found: dict[tuple[str, str], FieldError] = {}
    root = validator.schema if isinstance(validator.schema, Mapping) else {}
    for error in validator.iter_errors(instance):
        for failure in _field_errors(error, root):
            found.setdefault((failure.field, failure.rule), failure)
    return sorted(found.values(), key=_pointer_order)


def is_wrapped(output_schema: Mapping[str, Any] | None) -> bool:
    """Whether the catalog wrapped a non-object result as ``{"result": ...}``.

    MCP's structured content is an object, so the catalog builder puts any other
    result type under ``result``; this recognises exactly that shape (an object with
    the single required ``result`` whose own type is not object).
    """
    if not output_schema or set(output_schema) - {"type", "properties", "required", "$defs"}:
        return False
    properties = output_schema.get("properties") or {}
    return (
        output_schema.get("type") == "object"
        and list(properties) == ["result"]
        and output_schema.get("required") == ["result"]
        and properties["result"].get("type") != "object"
    )


def decode_groups(arguments: Mapping[str, Any], input_schema: Mapping[str, Any]) -> dict[str, Any]:
    """Parse groups sent as JSON text (``"body": "{\\"content\\": ...}"``), as many clients do.

    Only where the schema wants something other than a string, and only when the
    text parses; anything else is left for the schema check to name.
    """
    decoded = dict(arguments)
    properties = input_schema.get("properties") or {}
    for group in GROUPS:
        value = decoded.get(group)
        if isinstance(value, str) and (properties.get(group) or {}).get("type") != "string":
            try:
                decoded[group] = json.loads(value)
            except ValueError:
                pass
    return decoded


def _text(value: Any) -> str:
    """A path, query or header value as it goes on the wire (JSON spelling for non-strings)."""
    return value if isinstance(value, str) else json.dumps(value)


def _route_of(operation_id: str) -> tuple[str, str]:
    """``(METHOD, path)`` of an operation in the served spec."""
    for path, item in SPEC["paths"].items():
        for method, operation in item.items():
            if isinstance(operation, dict) and operation.get("operationId") == operation_id:
                return method.upper(), path
    raise LookupError(f"{operation_id} is not in the spec")


class Executor:
    """Runs the two meta-tools' calls (and direct tools) against one app."""

    def __init__(self, registry: CapabilityRegistry, app: ASGIApp) -> None:
        self._registry = registry
        self._validators = {c["name"]: Draft202012Validator(dict(c["inputSchema"])) for c in registry}
        # raise_app_exceptions=False: an unexpected failure must come back as the
        # app's own 500 problem document, not as an exception with a stack trace.
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        self._client = httpx.AsyncClient(transport=transport, base_url=INTERNAL_BASE_URL)
        self._search_route = _route_of("searchCapabilities")

    def prepare(self, name: str, arguments: Mapping[str, Any], caller: Caller) -> Call | Refusal:
        """Capability ``name`` with these arguments as a REST request, or why it cannot be one.

        Arguments that pass go to REST, which checks the permission itself. Arguments
        that fail are refused here, but in REST's order: a token that may not call the
        operation at all hears that first, as it would over REST.
        """
        capability = self._registry.get(name)
        if capability is None:
            return Refusal(ApiError(ErrorCode.not_found, f"no capability is named {name!r}; search_capabilities lists them"))
        decoded = decode_groups(arguments, capability["inputSchema"])
        failures = schema_failures(self._validators[name], decoded)
        if not failures:
            return Call(capability["method"], capability["path"], decoded, capability.get("outputSchema"))
        permission = capability["policy"]["permission"]
        if not caller.principal.allows(permission):
            return Refusal(ApiError(ErrorCode.permission_denied, f"this token lacks the {permission} permission"), metered=False)
        return Refusal(validation_error(failures))

    def search(self, query: Mapping[str, Any]) -> Call:
        """``GET /v1/capabilities`` with these query parameters: the REST search."""
        method, path = self._search_route
        return Call(method, path, {"query": query})

    async def run(self, call: Call, caller: Caller) -> Outcome:
        """Send ``call`` into the app as ``caller``; the REST route authenticates, charges and audits it."""
        return await self._dispatch((call.method, call.path), call.arguments, call.output_schema, caller)

    async def _dispatch(
        self,
        route: tuple[str, str],
        arguments: Mapping[str, Any],
        output_schema: Mapping[str, Any] | None,
        caller: Caller,
    ) -> Outcome:
        method, path = route
        for name, value in (arguments.get("path") or {}).items():
            path = path.replace("{" + name + "}", quote(_text(value), safe=""))
        params: list[tuple[str, str | int | float | bool | None]] = []
        for name, value in (arguments.get("query") or {}).items():
            values: Sequence[Any] = value if isinstance(value, list) else [value]
            params += [(name, _text(v)) for v in values if v is not None]
        headers = {name: _text(value) for name, value in (arguments.get("header") or {}).items()}
        headers["Authorization"] = f"Bearer {caller.token}"
        if caller.request_id:
            headers["X-Request-ID"] = caller.request_id
        response = await self._client.request(
            method,
            path,
            params=params,
            headers=headers,
            json=arguments["body"] if "body" in arguments else None,
        )
        return _outcome(response, output_schema)


def _outcome(response: httpx.Response, output_schema: Mapping[str, Any] | None) -> Outcome:
    """The REST response as a tool result: its JSON on success, its problem's code on failure."""
    is_json = response.headers.get("content-type", "").split(";")[0].strip().endswith("json")
    body = response.json() if is_json and response.content else None
    if response.is_error:
        if isinstance(body, dict) and body.get("code") in ErrorCode.__members__:
            return Outcome.of_problem(with_retry_hint(body, response.headers.get("retry-after")))
        fallback = STATUS_CODES.get(response.status_code, ErrorCode.backend_error)
        return Outcome.failure(ApiError(fallback, f"the operation failed with HTTP {response.status_code}"))
    if not is_json:
        return Outcome(None, response.text or f"Done (HTTP {response.status_code}, no content).")
    structured = {"result": body} if is_wrapped(output_schema) else body
    text = json.dumps(body, ensure_ascii=False)
    return Outcome(structured if isinstance(structured, dict) else None, text)
