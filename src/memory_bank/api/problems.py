"""Every failure leaves the app as an RFC 9457 problem document with a DESIGN §6 code.

The one map from a domain error's code to its HTTP status and title lives here, with
the renderer and the exception handlers. FastAPI's own 422 body and Starlette's HTML
500 would give clients two error formats and leak internals; these handlers give one
format with a stable ``code`` and, for bad input, a JSON pointer, rule and message per
failing field. Exceptions no handler here expects become the 500 document in
``api.middleware.UnexpectedErrorMiddleware``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from memory_bank.did_you_mean import closest
from memory_bank.errors import (
    ERROR_BY_CODE,
    BackendUnavailable,
    DomainError,
    ErrorCode,
    FieldError,
    InvalidInput,
    field_errors,
)
from memory_bank.generated.spec import SPEC

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"

#: The methods an ``Allow`` header may name, in the order it names them.
HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def _query_names(item: Mapping[str, Any], operation: Mapping[str, Any]) -> frozenset[str]:
    """The query parameters an operation of the spec declares (``$ref``s to its components resolved)."""
    declared = [*item.get("parameters", ()), *operation.get("parameters", ())]
    resolved = [SPEC["components"]["parameters"][p["$ref"].rsplit("/", 1)[1]] if "$ref" in p else p for p in declared]
    return frozenset(p["name"] for p in resolved if p.get("in") == "query")


def _spec_paths() -> dict[str, list[tuple[str, frozenset[str]]]]:
    """Method -> the spec's path templates for it, each with the query parameters it takes, a
    route of literals before one whose placeholder a word may fill."""
    paths: dict[str, list[tuple[str, frozenset[str]]]] = {}
    for path, item in SPEC["paths"].items():
        for method, operation in item.items():
            if method.upper() in HTTP_METHODS:
                paths.setdefault(method.upper(), []).append((path, _query_names(item, operation)))
    return {method: sorted(templates, key=lambda template: template[0].count("{")) for method, templates in paths.items()}


#: What a misspelt path is compared with (:func:`_spec_paths`).
_SPEC_PATHS = _spec_paths()
#: Every literal segment of the spec's paths: a word a client spelt right, whichever route it is in.
_LITERALS = frozenset(part for path in SPEC["paths"] for part in path.strip("/").split("/") if not part.startswith("{"))


@dataclass(frozen=True)
class ProblemType:
    """How one code reads over HTTP: its status and the problem document's ``title``."""

    status: int
    title: str


PROBLEM_TYPES: dict[ErrorCode, ProblemType] = {
    ErrorCode.unauthorized: ProblemType(401, "Missing or invalid bearer token"),
    ErrorCode.permission_denied: ProblemType(403, "Permission denied"),
    ErrorCode.not_found: ProblemType(404, "Not found"),
    ErrorCode.method_not_allowed: ProblemType(405, "Method not allowed"),
    ErrorCode.not_acceptable: ProblemType(406, "Not acceptable"),
    ErrorCode.unsupported_media_type: ProblemType(415, "Unsupported media type"),
    ErrorCode.invalid_params: ProblemType(422, "Invalid parameters"),
    ErrorCode.payload_too_large: ProblemType(413, "Payload too large"),
    ErrorCode.request_head_too_large: ProblemType(431, "Request header fields too large"),
    ErrorCode.malformed_request: ProblemType(400, "Malformed HTTP request"),
    ErrorCode.request_timeout: ProblemType(408, "Request timeout"),
    ErrorCode.conflict: ProblemType(409, "Conflict"),
    ErrorCode.rate_limited: ProblemType(429, "Rate limit exceeded"),
    ErrorCode.rate_limit_unavailable: ProblemType(503, "Rate limiter unavailable"),
    ErrorCode.backend_unavailable: ProblemType(503, "Backend unavailable"),
    ErrorCode.backend_error: ProblemType(500, "Backend error"),
}

#: The code an HTTP status stands for when nothing more is known (Starlette's own
#: refusals, a response without a problem body); each caller picks its fallback.
CODE_BY_STATUS: dict[int, ErrorCode] = {
    401: ErrorCode.unauthorized,
    403: ErrorCode.permission_denied,
    404: ErrorCode.not_found,
    405: ErrorCode.method_not_allowed,
    406: ErrorCode.not_acceptable,
    409: ErrorCode.conflict,
    413: ErrorCode.payload_too_large,
    431: ErrorCode.request_head_too_large,
    415: ErrorCode.unsupported_media_type,
    429: ErrorCode.rate_limited,
}

class HttpRefusal(Exception):
    """A refusal the HTTP edge makes itself, with headers of its own (``Allow``, ``Accept-Encoding``, a challenge).

    Its status is its code's: each refusal has a code of its own (406 and 415 were once
    ``invalid_params`` under a borrowed status). Every 401 is one of these: the
    token check (``api.auth.challenged_principal``, where a token is refused, for REST and MCP
    alike; and ``api.auth.install_write_refusals``, for a write's transaction that finds the
    token revoked since) attaches the one ``WWW-Authenticate`` challenge, ``api.auth.challenge``.
    """

    def __init__(self, error: DomainError, *, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.status = status_of(error)
        self.headers = dict(headers or {})


def error_for_status(status: int, detail: str, fallback: ErrorCode) -> DomainError:
    """The error an HTTP status stands for (``fallback`` when no one code does)."""
    return ERROR_BY_CODE[CODE_BY_STATUS.get(status, fallback)](detail)


def status_of(error: DomainError) -> int:
    return PROBLEM_TYPES[error.code].status


def problem_document(error: DomainError, *, request_id: str | None = None, instance: str | None = None) -> dict[str, Any]:
    """The RFC 9457 body for ``error``."""
    problem_type = PROBLEM_TYPES[error.code]
    body: dict[str, Any] = {
        "type": f"https://memory-bank.dev/problems/{error.code.value}",
        "title": problem_type.title,
        "status": problem_type.status,
        "code": error.code.value,
        "detail": error.detail,
    }
    if instance:
        body["instance"] = instance
    if request_id:
        body["request_id"] = request_id
    if error.errors:
        body["errors"] = [vars(e) for e in error.errors]
    return body


def headers_of(error: DomainError) -> dict[str, str]:
    """The headers the code implies: the wait before a retry. (A 401's challenge names the
    service's public URL, which the token check knows: it comes with its ``HttpRefusal``.)"""
    return {} if error.retry_after is None else {"Retry-After": str(error.retry_after)}


def validation_error(errors: list[FieldError]) -> InvalidInput:
    """422 naming each failing field, a field over its ``maxLength`` or ``maxItems`` too.

    Only the body's bytes make a 413 (``api.bodies.read_capped``): a 129-character id
    in a small body is a value the schema refuses, which a client fixes by changing
    that value, not by sending less.
    """
    summary = "; ".join(f"{e.field or '/'}: {e.message}" for e in errors[:5])
    return InvalidInput(summary or "the request does not match the schema", errors)


def allowed_methods(request: Request) -> list[str]:
    """Every method the app would route at this request's path.

    Starlette's 405 names only the methods of the first route whose path matched, but
    a path such as ``/v1/memory/{memory_id}`` is served by one route per method; so
    each method is put to the router's own matching. HEAD goes wherever GET does.
    """
    routes = request.app.router.routes
    served = {
        method
        for method in HTTP_METHODS
        if any(route.matches({**request.scope, "method": method})[0] is Match.FULL for route in routes)
    }
    if "GET" in served:  # answered as a GET (``api.middleware.HeadAsGet``)
        served.add("HEAD")
    return [method for method in HTTP_METHODS if method in served]


def _served_without_the_slash(request: Request) -> str | None:
    """The request's path without its trailing slash, when the app routes that path for this
    method: a client that added the slash (``/mcp/``) is told, not redirected (a redirect
    would be built from the Host header)."""
    path = request.url.path
    if len(path) < 2 or not path.endswith("/"):
        return None
    bare = path.rstrip("/") or "/"
    method = "GET" if request.method == "HEAD" else request.method
    scope = {**request.scope, "path": bare, "raw_path": bare.encode(), "method": method}
    return bare if any(route.matches(scope)[0] is Match.FULL for route in request.app.router.routes) else None


def _misspelt_route(request: Request, *, taking_its_query: bool = False) -> str | None:
    """The path of a route for this method that the request's path misspells in one literal
    segment (``/v1/memory/serch`` -> ``/v1/memory/search``, ``/v1/memroy`` -> ``/v1/memory``),
    the request's own values kept in the route's placeholders; with ``taking_its_query``, only a
    route that takes every query parameter sent. None when there is none. A segment that is a
    literal of some route is spelt right: ``.../deactivate`` with a bad agent id is no misspelt
    ``.../reactivate``."""
    sent = request.url.path.strip("/").split("/")
    method = "GET" if request.method == "HEAD" else request.method
    for template, query in _SPEC_PATHS.get(method, ()):
        parts = template.strip("/").split("/")
        if len(parts) != len(sent) or (taking_its_query and not set(request.query_params) <= query):
            continue
        differing = [(part, given) for part, given in zip(parts, sent) if part != given and not part.startswith("{")]
        if len(differing) == 1 and differing[0][1] not in _LITERALS and closest(differing[0][1], [differing[0][0]]):
            return "/" + "/".join(given if part.startswith("{") else part for part, given in zip(parts, sent))
    return None


def _not_served(request: Request, route: str) -> str:
    return f"nothing is served at {request.url.path}; did you mean {route}?"


def _misspelt_route_refusal(request: Request, errors: Sequence[FieldError]) -> DomainError | None:
    """404 naming the route, when a request refused for its path or query arguments alone has a
    path that misspells a route's: ``/v1/memory/serch?q=x`` matched ``/v1/memory/{memory_id}``,
    and "serch is no memory id" or "q is not a parameter" would send the client the wrong way."""
    if not errors or not all(e.field.startswith(("/path/", "/query/")) for e in errors):
        return None
    # Refused for its query alone, the path may be a route's: the route it misspells must take that query.
    route = _misspelt_route(request, taking_its_query=not any(e.field.startswith("/path/") for e in errors))
    return error_for_status(404, _not_served(request, route), ErrorCode.invalid_params) if route else None


def problem_response(request: Request, failure: DomainError | HttpRefusal) -> JSONResponse:
    refusal = failure if isinstance(failure, HttpRefusal) else HttpRefusal(failure)
    request_id = getattr(request.state, "request_id", None)
    error = refusal.error
    return JSONResponse(
        problem_document(error, request_id=request_id, instance=request.url.path),
        status_code=refusal.status,
        media_type=PROBLEM_JSON,
        headers=headers_of(error) | refusal.headers or None,
    )


def install_problem_handlers(app: FastAPI) -> None:
    """Route every exception class a request can raise to one problem+json renderer."""

    async def on_domain_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, DomainError | HttpRefusal)
        if isinstance(exc, InvalidInput) and (misspelt := _misspelt_route_refusal(request, exc.errors)):
            return problem_response(request, misspelt)
        return problem_response(request, exc)

    async def on_validation_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        errors = field_errors(exc.errors())
        return problem_response(request, _misspelt_route_refusal(request, errors) or validation_error(errors))

    async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        headers = dict(exc.headers or {})
        detail = str(exc.detail)
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(request))
        elif exc.status_code == 404 and (served := _served_without_the_slash(request)):
            detail = f"nothing is served at {request.url.path}; {served} is (without the trailing slash)"
        elif exc.status_code == 404 and (route := _misspelt_route(request)):
            detail = _not_served(request, route)
        error = error_for_status(exc.status_code, detail, ErrorCode.invalid_params)
        return problem_response(request, HttpRefusal(error, headers=headers))

    async def on_database_down(request: Request, exc: Exception) -> JSONResponse:
        log.warning("database unreachable: %s", exc)
        return problem_response(request, BackendUnavailable("the database is unreachable"))

    app.add_exception_handler(DomainError, on_domain_error)
    app.add_exception_handler(HttpRefusal, on_domain_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(OperationalError, on_database_down)
