"""Run a tool call as a REST call: an ASGI request into the same app, in process.

An MCP call must be a REST call, not a second implementation: once its arguments
pass the capability's advertised ``inputSchema`` they become an HTTP request that is
handed to the app's own ASGI callable (no socket, no HTTP client). Permissions, rate
limits, validation, handlers and error mapping are therefore exactly the REST ones,
and a failure comes back as the same problem document, whose ``code`` the tool
result carries.

What the MCP transport already did is not done twice. The scope carries an
``InProcessCall``: the principal the transport verified for this call (the route
takes it instead of verifying the token again; a scope key cannot be sent by a
client, unlike a header), and the handler's reply comes back on it as an object, so
a result is never serialised, parsed and serialised again. The request enters below
the app's middlewares, at its routes behind its problem handlers: it is already inside
the ``/mcp`` request, whose middlewares give it its request id, its access-log line,
its metrics and the last-resort 500, so one tool call is logged and counted once; it
is audited once, as the tool call, by ``Toolbox``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlencode

import anyio
from fastapi import FastAPI
from fastapi.middleware.asyncexitstack import AsyncExitStackMiddleware
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.types import ASGIApp, Message

from memory_bank.api.bodies import IN_PROCESS, InProcessCall
from memory_bank.api.problems import validation_error
from memory_bank.capabilities.execute.outcome import Caller, Outcome, reply_outcome, response_outcome
from memory_bank.capabilities.execute.validation import ArgumentSchema, decode_groups
from memory_bank.capabilities.registry import CapabilityRegistry
from memory_bank.did_you_mean import closest
from memory_bank.errors import DomainError, NotFound, PermissionDenied
from memory_bank.generated.spec import SPEC

__all__ = ["ROUTES", "Call", "Executor", "Refusal"]

log = logging.getLogger(__name__)

#: The Host of in-process requests; never resolved, never leaves the process.
INTERNAL_HOST = "memory-bank.internal"


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

    error: DomainError
    metered: bool = True


def _text(value: Any) -> str:
    """A path, query or header value as it goes on the wire (JSON spelling for non-strings).

    A float with no fraction goes as the integer JSON Schema says it is (``5.0`` is ``5``):
    the tool's schema took it as an integer, and a route reads a query integer only as digits.
    """
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, str) else json.dumps(value)


#: ``operationId -> (METHOD, path)`` for every operation of the served spec, read once at start-up.
ROUTES: dict[str, tuple[str, str]] = {
    operation["operationId"]: (method.upper(), path)
    for path, item in SPEC["paths"].items()
    for method, operation in item.items()
    if isinstance(operation, dict) and "operationId" in operation
}


@dataclass
class _Response:
    """What the app sent back: status, headers and body."""

    status: int | None = None
    headers: dict[str, str] | None = None
    body: bytearray | None = None


class Executor:
    """Runs the two meta-tools' calls (and direct tools) against one app."""

    def __init__(self, registry: CapabilityRegistry, app: FastAPI) -> None:
        self._registry = registry
        self._app = app
        self._routes: ASGIApp | None = None
        self._schemas = {c["name"]: ArgumentSchema(c["inputSchema"]) for c in registry}
        self._search_route = ROUTES["searchCapabilities"]

    def _behind_problem_handlers(self) -> ASGIApp:
        """The app's routes wrapped as FastAPI wraps them innermost (built on first use: the
        handlers are installed once the app is put together)."""
        if self._routes is None:
            handlers = {key: h for key, h in self._app.exception_handlers.items() if key not in (500, Exception)}
            self._routes = ExceptionMiddleware(AsyncExitStackMiddleware(self._app.router), handlers=handlers)
        return self._routes

    def prepare(self, name: str, arguments: Mapping[str, Any], caller: Caller) -> Call | Refusal:
        """Capability ``name`` with these arguments as a REST request, or why it cannot be one.

        Arguments that pass go to REST, which checks the permission itself. Arguments
        that fail are refused here, but in REST's order: a token that may not call the
        operation at all hears that first, as it would over REST.
        """
        capability = self._registry.get(name)
        if capability is None:
            # In the spec, kept off MCP on purpose: say so, in any case, or the agent keeps guessing.
            spelt = next((known for known in ROUTES if known.casefold() == name.casefold()), None)
            if spelt is not None and self._registry.get(spelt) is None:
                method, path = ROUTES[spelt]
                return Refusal(NotFound(f"{spelt!r} is not offered to agents (REST only: {method} {path}); search_capabilities lists what is"))
            close = closest(name, [c["name"] for c in self._registry])
            hint = f"; did you mean {close!r}?" if close else "; search_capabilities lists them"
            return Refusal(NotFound(f"no capability is named {name!r}{hint}"))
        decoded = decode_groups(arguments, capability["inputSchema"])
        failures = self._schemas[name].failures(decoded)
        if not failures:
            return Call(capability["method"], capability["path"], decoded, capability.get("outputSchema"))
        permission = capability["policy"]["permission"]
        if not caller.principal.allows(permission):
            return Refusal(PermissionDenied(f"this token lacks the {permission} permission"), metered=False)
        return Refusal(validation_error(failures))

    def search(self, query: Mapping[str, Any]) -> Call:
        """``GET /v1/capabilities`` with these query parameters: the REST search."""
        method, path = self._search_route
        return Call(method, path, {"query": query})

    async def run(self, call: Call, caller: Caller) -> Outcome:
        """Send ``call`` into the app as ``caller``; the REST route charges it."""
        in_process = InProcessCall(caller.principal if caller.verified_for_call else None)
        response = await self._send(call, caller, in_process)
        if in_process.reply is not None and response.status is not None and response.status < 400:
            return reply_outcome(in_process.reply, call.output_schema)
        return response_outcome(response.status or 500, response.headers or {}, bytes(response.body or b""), call.output_schema)

    async def _send(self, call: Call, caller: Caller, in_process: InProcessCall) -> _Response:
        """The ASGI request ``call`` becomes, answered by the app; an exception the app lets out is a 500."""
        arguments = call.arguments
        raw_path = call.path
        for name, value in (arguments.get("path") or {}).items():
            raw_path = raw_path.replace("{" + name + "}", quote(_text(value), safe=""))
        params: list[tuple[str, str]] = []
        for name, value in (arguments.get("query") or {}).items():
            values: Sequence[Any] = value if isinstance(value, list) else [value]
            params += [(name, _text(v)) for v in values if v is not None]
        headers = [(b"host", INTERNAL_HOST.encode())]
        for name, value in (arguments.get("header") or {}).items():
            headers.append((name.lower().encode("latin-1"), _text(value).encode("latin-1")))
        if not caller.verified_for_call:
            headers.append((b"authorization", f"Bearer {caller.token}".encode("latin-1")))
        if caller.request_id:
            headers.append((b"x-request-id", caller.request_id.encode("latin-1")))
        body = b""
        if arguments.get("body") is not None:
            body = json.dumps(arguments["body"], ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
            headers += [(b"content-length", str(len(body)).encode()), (b"content-type", b"application/json")]
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": call.method,
            "headers": headers,
            "scheme": "http",
            "path": unquote(raw_path),
            "raw_path": raw_path.encode(),
            "query_string": urlencode(params, quote_via=quote).encode(),
            "server": (INTERNAL_HOST, 80),
            "client": ("127.0.0.1", 123),
            "root_path": "",
            IN_PROCESS: in_process,
            "app": self._app,
        }
        pending = [{"type": "http.request", "body": body, "more_body": False}]
        response = _Response()
        answered = anyio.Event()

        async def receive() -> Message:
            if pending:
                return pending.pop()
            await answered.wait()  # the client stays connected until the whole answer is in
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            if message["type"] == "http.response.start":
                response.status = message["status"]
                response.headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in message.get("headers", [])}
                response.body = bytearray()
            elif message["type"] == "http.response.body" and response.body is not None:
                response.body.extend(message.get("body", b""))
                if not message.get("more_body", False):
                    answered.set()

        try:
            await self._behind_problem_handlers()(scope, receive, send)
        except Exception:  # below the app's last-resort middleware: logged here, answered as a 500
            log.exception("unexpected failure running %s %s in process", call.method, call.path)
        return response
