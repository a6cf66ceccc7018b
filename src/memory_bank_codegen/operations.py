"""The operations of a spec, read once into the shape the interface and route renderers share.

Both renderers must agree on every method name, parameter name, type and default,
or the generated router would call the interface wrongly; reading the spec here,
once, makes that agreement structural.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memory_bank_codegen.body_bounds import max_json_bytes
from memory_bank_codegen.errors import CodegenError
from memory_bank_codegen.loader import Operation as SpecOperation
from memory_bank_codegen.loader import iter_operations, operation_parameters
from memory_bank_codegen.naming import pascal_case, snake_case
from memory_bank_codegen.pytypes import SCALARS, TypeNamer, constraints
from memory_bank_codegen.refs import deref

JSON = "application/json"

#: How the routes read a query's integers, numbers and booleans: only in the spec's form
#: (``memory_bank.api.query``), where pydantic alone would take ``+5``, ``1_0`` or ``yes``.
QUERY_SCALARS = {**SCALARS, "integer": "QueryInt", "number": "QueryNumber", "boolean": "QueryBool"}


@dataclass(frozen=True)
class Parameter:
    name: str  # as on the wire
    python_name: str
    location: str  # path, query or header
    type_expr: str
    required: bool
    default: Any
    bounds: dict[str, Any]
    description: str
    repeatable: bool = False  # an array: its name may come more than once in a query string (a header too)
    route_type_expr: str = ""  # what the route declares, where it differs from ``type_expr`` (a query's form)

    @property
    def declared_type(self) -> str:
        return self.route_type_expr or self.type_expr


@dataclass(frozen=True)
class RequestBody:
    media_type: str
    type_expr: str  # a model for JSON, ``str`` for text bodies such as JSON lines
    max_bytes: int | None = None  # the cap enforced while the body is read: a JSON body's from its bounds (``body_bounds``), a text body's ``x-max-bytes``

    @property
    def is_json(self) -> bool:
        return self.media_type == JSON


@dataclass(frozen=True)
class Operation:
    operation_id: str
    method: str
    path: str
    summary: str
    permission: str
    parameters: tuple[Parameter, ...]
    body: RequestBody | None
    success_statuses: tuple[int, ...]  # first one is the default
    success_media_type: str | None  # None: no content
    reply_type: str

    @property
    def python_name(self) -> str:
        return snake_case(self.operation_id)


def read_operations(spec: dict[str, Any], models_prefix: str = "models.") -> list[Operation]:
    """Every operation of ``spec`` in path order (path-item refs followed); routes re-sort for matching.

    The same walk (``loader.iter_operations``) lists the catalog's capabilities, so an
    operation is a route exactly when it is a tool.
    """
    namer = TypeNamer(spec, prefix=models_prefix)
    query_namer = TypeNamer(spec, prefix=models_prefix, scalars=dict(QUERY_SCALARS))
    operations = []
    for entry in iter_operations(spec):
        label = entry.operation.get("operationId") or f"{entry.method.upper()} {entry.path}"
        try:
            operations.append(_read_operation(namer, query_namer, entry))
        except CodegenError as exc:
            raise exc.within(label) from None
    if namer.inline_models:
        names = ", ".join(m.name for m in namer.inline_models)
        raise CodegenError.at("spec", "inline-object", f"inline object schemas in operations must be components: {names}")
    return operations


def _read_operation(namer: TypeNamer, query_namer: TypeNamer, entry: SpecOperation) -> Operation:
    op = entry.operation
    op_id = op["operationId"]
    parameters = tuple(
        _read_parameter(query_namer if p["in"] == "query" else namer, namer, op_id, p)
        for p in operation_parameters(entry, namer.spec)
        if p["in"] != "cookie"
    )
    statuses, media_type, reply_type = _read_success(namer, op_id, op)
    return Operation(
        operation_id=op_id,
        method=entry.method.upper(),
        path=entry.path,
        summary=op.get("summary", ""),
        permission=op.get("x-capability", {}).get("permission", ""),
        parameters=parameters,
        body=_read_body(namer, op_id, op),
        success_statuses=statuses,
        success_media_type=media_type,
        reply_type=reply_type,
    )


def _read_parameter(route_namer: TypeNamer, namer: TypeNamer, op_id: str, param: dict[str, Any]) -> Parameter:
    """The parameter as the interface takes it (``namer``) and as its route reads it (``route_namer``)."""
    schema = param.get("schema", {})
    resolved = namer.resolve(schema)
    # Bounds are stated on Query()/Path() where a reader of the route sees them, so a
    # bounded alias is inlined; an unbounded one (an enum) keeps its readable name.
    bounds = constraints(resolved)
    owner = pascal_case(op_id) + pascal_case(param["name"])
    type_expr = namer.expression(resolved if bounds else schema, owner)
    route_type_expr = route_namer.expression(resolved if bounds else schema, owner)
    required = bool(param.get("required")) or param["in"] == "path"
    optional = "" if required or "default" in resolved else " | None"
    return Parameter(
        name=param["name"],
        python_name=snake_case(param["name"]),
        location=param["in"],
        type_expr=type_expr + optional,
        required=required,
        default=resolved.get("default"),
        bounds=bounds,
        description=" ".join(param.get("description", resolved.get("description", "")).split()),
        repeatable=resolved.get("type") == "array",
        route_type_expr="" if route_type_expr == type_expr else route_type_expr + optional,
    )


def _read_body(namer: TypeNamer, op_id: str, op: dict[str, Any]) -> RequestBody | None:
    if "requestBody" not in op:
        return None
    content = (deref(namer.spec, op["requestBody"]) or {}).get("content", {})
    if JSON in content:
        schema = content[JSON].get("schema", {})
        return RequestBody(JSON, namer.expression(schema, pascal_case(op_id) + "Body"), max_bytes=max_json_bytes(schema, namer))
    media_type = next(iter(content), "application/octet-stream")
    max_bytes = namer.resolve(content.get(media_type, {}).get("schema", {})).get("x-max-bytes")
    return RequestBody(media_type, "str", max_bytes)


def _read_success(namer: TypeNamer, op_id: str, op: dict[str, Any]) -> tuple[tuple[int, ...], str | None, str]:
    responses = {str(code): deref(namer.spec, r) or {} for code, r in op.get("responses", {}).items()}
    statuses = tuple(int(code) for code in responses if code.startswith("2"))
    if not statuses:
        raise CodegenError.at(op_id, "success-response", "declare a 2xx response: it is what the route replies")
    content = responses[str(statuses[0])].get("content", {})
    if not content:
        return statuses, None, "None"
    if JSON in content:
        schema = content[JSON].get("schema", {})
        return statuses, JSON, namer.expression(schema, pascal_case(op_id) + "Response")
    return statuses, next(iter(content)), "TextStream"
