"""Render a spec's ``<module>_routes.py``: a FastAPI router whose routes validate input and call its interface.

Each route authenticates first (a dependency, so a bad token is 401 before a bad body is
422), refuses a repeated query parameter or header the spec declares single-valued
(``api.query``: FastAPI would take one of the values), lets FastAPI validate path, query
and header against bounds copied from the spec (a query integer, number or boolean only in the
spec's form, ``api.query.QueryInt``), then reads the body itself, capped at what its schema admits: a body declared to
FastAPI would be read whole before the token is checked. It calls the interface
method and renders its ``Reply`` with the statuses the spec declares. Routes are
excluded from FastAPI's own schema: ``/openapi.json`` serves the handwritten spec.
"""

from __future__ import annotations

import re
from typing import Any

from memory_bank_codegen.imports import ImportGroups, import_block
from memory_bank_codegen.naming import pascal_case
from memory_bank_codegen.operations import Operation, Parameter, RequestBody
from memory_bank_codegen.pytypes import keyword_args


def _imports(interface: str, interface_module: str) -> ImportGroups:
    return (
        {"typing": ("Annotated", "Literal")},
        {
            "fastapi": ("APIRouter", "Depends", "Header", "Path", "Query", "Request"),
            "fastapi.responses": ("Response",),
        },
        {
            "memory_bank.api.auth": ("Authorize",),
            "memory_bank.api.bodies": ("read_json_body", "read_text_body", "render_reply"),
            "memory_bank.api.query": ("QueryBool", "QueryInt", "QueryNumber", "checked_query"),
            "memory_bank.generated": ("models",),
            f"memory_bank.generated.{interface_module}": (interface,),
            "memory_bank.security.principal": ("Principal",),
        },
    )

PARAM_CLASS = {"path": "Path", "query": "Query", "header": "Header"}


def render_routes(operations: list[Operation], spec: dict[str, Any], *, interface_module: str) -> str:
    interface = pascal_case(spec["info"]["title"]) + "Api"
    routes = "\n\n".join(_render_route(op) for op in sorted(operations, key=_match_order))
    body = (
        f"def build_router(api: {interface}, authorize: Authorize) -> APIRouter:\n"
        + '    """The API\'s routes bound to one implementation and one authorization policy."""\n'
        + "    router = APIRouter()\n\n"
        + routes
        + "\n\n    return router\n"
    )
    return import_block(body, _imports(interface, interface_module), postponed_annotations=False) + "\n\n" + body


def _match_order(op: Operation) -> list[tuple[bool, str]]:
    """Literal segments before templated ones, so ``/memory/export`` wins over ``/memory/{id}``."""
    return [(seg.startswith("{"), seg) for seg in op.path.strip("/").split("/")] + [(False, op.method)]


def _render_route(op: Operation) -> str:
    args = [f'principal: Annotated[Principal, Depends(authorize("{op.permission}"))]']
    call = ["principal"]
    checks = [repr(p.name) for p in op.parameters if p.location == "query"]
    repeatable = [repr(p.name) for p in op.parameters if p.location == "query" and p.repeatable]
    headers = [repr(p.name) for p in op.parameters if p.location == "header" and not p.repeatable]
    if repeatable:
        checks.append(f"repeatable=({', '.join(repeatable)},)")
    if headers:
        checks.append(f"headers=({', '.join(headers)},)")
    args.append(f"_query: Annotated[None, Depends(checked_query({', '.join(checks)}))]")
    if op.body is not None:
        args.append("request: Request")
    args += [_render_param(p) for p in op.parameters]
    call += [f"{p.python_name}={p.python_name}" for p in op.parameters]
    lines = [
        f'    @router.{op.method.lower()}("{_route_path(op)}", operation_id="{op.operation_id}", include_in_schema=False)',
        f"    async def {op.python_name}(",
        *[f"        {a}," for a in ["*", *args]],
        "    ) -> Response:",
    ]
    if op.body is not None:
        lines.append(f"        body = await {_read_body(op.body)}")
        call.append("body=body")
    lines += [
        f"        reply = await api.{op.python_name}({', '.join(call)})",
        f"        return render_reply(reply, statuses={op.success_statuses!r}, media_type={op.success_media_type!r})",
    ]
    return "\n".join(lines)


def _route_path(op: Operation) -> str:
    """``op.path`` with ``{name:path}`` for a path parameter whose values may hold ``/`` (an
    agent id such as ``team/bot``): Starlette decodes ``%2F`` before it routes, so with a plain
    ``{name}`` the request for such an id would match no route at all."""
    path = op.path
    for p in op.parameters:
        pattern = p.bounds.get("pattern")
        if p.location == "path" and (pattern is None or re.search(pattern, "a/b")):
            path = path.replace("{" + p.name + "}", "{" + p.name + ":path}")
    return path


def _read_body(body: RequestBody) -> str:
    """The call that reads the body once the principal is known, capped by its schema."""
    if body.is_json:
        return f"read_json_body(request, {body.type_expr}, max_bytes={body.max_bytes})"
    cap = "" if body.max_bytes is None else f", max_bytes={body.max_bytes}"
    return f"read_text_body(request, {body.media_type!r}{cap})"


def _render_param(p: Parameter) -> str:
    options: dict[str, Any] = {}
    if p.python_name != p.name:
        options["alias"] = p.name
    options.update(p.bounds)
    if p.description:
        options["description"] = p.description
    annotation = f"Annotated[{p.declared_type}, {PARAM_CLASS[p.location]}({keyword_args(options)})]"
    return f"{p.python_name}: {annotation}" + ("" if p.required else f" = {p.default!r}")
