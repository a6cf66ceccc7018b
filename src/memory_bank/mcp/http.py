"""MCP over streamable HTTP at ``/mcp``, inside the FastAPI app, behind the same bearer tokens.

Stateless mode: every POST is served on its own (no ``Mcp-Session-Id``, nothing kept
between requests), so any replica behind a plain load balancer can answer any request
(DESIGN §7), and responses are plain JSON (no SSE): the tools neither stream nor call
back. The session manager's task group lives for the app's lifespan (``running``); a
fresh manager per lifespan lets the same app be started more than once (tests do).

Every check a request meets before the MCP SDK sees it happens here, in this order:
the ``Host`` and ``Origin`` headers name this service (``origins``, DNS rebinding),
the method is POST (a stateless server has no event stream to open with GET and no
session to DELETE), the bearer token is valid (else 401 with ``WWW-Authenticate:
Bearer resource_metadata=...`` pointing at the RFC 9728 document served next to it),
the media types are JSON, the body fits, it is one JSON-RPC message of a protocol
revision the SDK speaks (``envelope``), an OAuth token's tool call has the scope its
operation needs (else 403 ``insufficient_scope``, which an OAuth client answers by asking
for that scope), and a request that no tool result will answer fits the org's budget
(``metering``; else ``_refused``: 429 ``rate_limited``, or 503 ``rate_limit_unavailable``).
Refusals before the body is read are HTTP matters and answer problem+json like the
REST API; a body that is not a JSON-RPC message gets a JSON-RPC
error, as the protocol defines. The token is verified here once per request; a tool
call carries that principal into its in-process REST request (``Caller``) and is
answered in this task (``exchange``); anything else goes to the SDK's transport.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import JSONRPCError, JSONRPCMessage, JSONRPCRequest, RequestId
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from memory_bank.api.auth import RESOURCE_METADATA_PATH, bearer_token, challenged_principal, insufficient_scope
from memory_bank.api.bodies import read_capped
from memory_bank.api.media import JSON, accepts, essence
from memory_bank.api.problems import HttpRefusal, headers_of, problem_response, status_of
from memory_bank.capabilities.execute.outcome import Caller
from memory_bank.errors import (
    BackendUnavailable,
    DomainError,
    MethodNotAllowed,
    NotAcceptable,
    PayloadTooLarge,
    PermissionDenied,
    UnsupportedMediaType,
)
from memory_bank.mcp.envelope import EnvelopeError, check_envelope, check_protocol_version
from memory_bank.mcp.exchange import CALL_TOOL, answer, answered_here
from memory_bank.mcp.metering import charged_by_transport, refusal
from memory_bank.mcp.origins import AllowedOrigins
from memory_bank.mcp.server import build_server
from memory_bank.mcp.tools import Toolbox
from memory_bank.observability.metrics import MCP_OPERATION, name_operation
from memory_bank.security.oauth import OAuthTokens
from memory_bank.security.tokens import PERMISSIONS
from memory_bank.store.tokens import TokenStore

MCP_PATH = "/mcp"
_CALLER = "mcp_caller"
_REACHED_TOOLBOX = "mcp_reached_toolbox"

#: The largest tool call the catalog allows, postMemory with every bound filled by
#: characters outside the BMP sent as ``\\uXXXX\\uXXXX`` escapes (12 bytes each), is
#: about 606 000 bytes (tests/test_mcp_transport.py sends it); the SDK's own cap is 4 MiB.
MAX_BODY_BYTES = 1024 * 1024


def _too_large() -> PayloadTooLarge:
    return PayloadTooLarge(f"the JSON-RPC message is at most {MAX_BODY_BYTES} bytes")


def _replaying(body: bytes, receive: Receive) -> Receive:
    """``receive`` with the already-read body handed out again, for the SDK to read it."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> Message:
        return pending.pop() if pending else await receive()

    return replay


def _media_type_as_checked(scope: Scope) -> Scope:
    """``scope`` with its Content-Type in the lower case the SDK compares it in.

    A media type is case-insensitive (RFC 9110 §8.3.1) and ``_check_media_types`` reads it so;
    the SDK's own check does not, and answered ``APPLICATION/JSON`` with its JSON-RPC 415 for
    every message but the tool calls answered here.
    """
    headers = [(name, value.lower() if name == b"content-type" else value) for name, value in scope["headers"]]
    return {**scope, "headers": headers}


def _refused(request_id: RequestId, error: DomainError) -> Response:
    """A request refused before it runs, in HTTP's terms and in JSON-RPC's at once.

    The status and ``Retry-After`` are the REST API's for the code (429 for a spent budget,
    503 for a limiter that is down), for whatever reads HTTP (a gateway, a client that
    backs off by status); the body is the JSON-RPC error for the request's id, as
    application/json, which is what the Python SDK reads from a non-2xx answer (it
    surfaces that error, with the problem and its ``retry_after_seconds`` as ``data``). The
    TypeScript SDK, and mcp-remote over it, throw the status with this body as the message.
    """
    body = JSONRPCError(jsonrpc="2.0", id=request_id, error=refusal(error))
    return Response(body.model_dump_json(by_alias=True), status_of(error), headers_of(error), media_type=JSON)


def _caller_of(ctx: ServerRequestContext[Any, Any]) -> Caller:
    """The caller ``McpHttp`` authenticated, from the HTTP request this message came in.

    Asked for by a ``tools/call`` only once the call reached the toolbox, which charges it:
    marked so, for ``McpHttp`` to charge one the SDK refused before that (``_charging_if_unreached``).
    """
    if ctx.request is None:
        raise RuntimeError("an HTTP transport message came without its HTTP request")
    caller: Caller = getattr(ctx.request.state, _CALLER)
    if ctx.method == CALL_TOOL:
        setattr(ctx.request.state, _REACHED_TOOLBOX, True)
    return caller


class McpHttp:
    """The ``/mcp`` ASGI endpoint and the protected-resource document."""

    def __init__(
        self, toolbox: Toolbox, tokens: TokenStore, oauth: OAuthTokens | None, public_url: str, *, allow_loopback: bool
    ) -> None:
        self._server = build_server(toolbox, _caller_of, metered=False)  # charged in ``__call__``
        self._toolbox = toolbox
        self._tokens = tokens
        self._oauth = oauth
        self._public_url = public_url.rstrip("/")
        self._origins = AllowedOrigins(public_url, allow_loopback=allow_loopback)
        self._manager: StreamableHTTPSessionManager | None = None
        self._lifespan_state: Any = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Serve ``/mcp`` for as long as this is entered (the app's lifespan)."""
        manager = StreamableHTTPSessionManager(app=self._server, stateless=True, json_response=True)
        # The manager keeps the server's lifespan state to itself; ``exchange`` needs its own.
        async with manager.run(), self._server.lifespan(self._server) as lifespan_state:
            self._manager, self._lifespan_state = manager, lifespan_state
            try:
                yield
            finally:
                self._manager = None

    def resource_metadata(self) -> dict[str, Any]:
        """RFC 9728 protected-resource metadata: what ``/mcp`` is, how to present a token and, when
        one is configured, the authorization server that issues them (an OAuth client needs no header)."""
        document: dict[str, Any] = {"resource": self._public_url + MCP_PATH}
        if self._oauth is not None:
            document["authorization_servers"] = [self._oauth.issuer]
        return document | {
            "resource_name": "Memory Bank",
            "bearer_methods_supported": ["header"],
            "scopes_supported": sorted(PERMISSIONS),
        }

    def install(self, app: FastAPI) -> None:
        """Route ``/mcp`` and the metadata document (at the origin and RFC 9728's path-suffixed URL)."""
        app.router.routes.append(Route(MCP_PATH, self, include_in_schema=False))

        async def metadata(request: Request) -> JSONResponse:
            return JSONResponse(self.resource_metadata())

        for path in (RESOURCE_METADATA_PATH, RESOURCE_METADATA_PATH + MCP_PATH):
            app.add_route(path, metadata, methods=["GET"], include_in_schema=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        name_operation(scope, MCP_OPERATION)
        request = Request(scope, receive)
        try:
            self._check_addressed(request)
            if request.method != "POST":
                refused = MethodNotAllowed("MCP is served by POST only (stateless: no event stream, no session)")
                raise HttpRefusal(refused, headers={"Allow": "POST"})
            caller = await self._authenticate(request)
            _check_media_types(request)
            body = await read_capped(request, MAX_BODY_BYTES, _too_large)
            message = check_envelope(body)
            check_protocol_version(request.headers.get("mcp-protocol-version"), message)
            self._check_scope(message, caller)
            if self._manager is None:
                raise BackendUnavailable("the MCP transport is not running")
        except (DomainError, HttpRefusal) as error:
            await problem_response(request, error)(scope, receive, send)
            return
        except EnvelopeError as error:
            await error.response()(scope, receive, send)
            return
        if isinstance(message, JSONRPCRequest) and charged_by_transport(message.method, message.params):
            try:
                await self._toolbox.admit(caller)
            except DomainError as error:
                await _refused(message.id, error)(scope, receive, send)
                return
        scope["state"][_CALLER] = caller
        tool_call = answered_here(message, request)
        if tool_call is not None:  # the hot path, without the SDK's per-request session (``exchange``)
            response = await answer(self._server, self._lifespan_state, tool_call, request)
            await response(scope, receive, send)
            return
        if isinstance(message, JSONRPCRequest) and not charged_by_transport(message.method, message.params):
            # a tool call, charged by the toolbox if the SDK lets it reach it
            send = self._charging_if_unreached(scope, caller, send)
        await self._manager.handle_request(_media_type_as_checked(scope), _replaying(body, receive), send)

    def _charging_if_unreached(self, scope: Scope, caller: Caller, send: Send) -> Send:
        """``send``, charging a ``tools/call`` that the SDK answers without running it as its answer starts.

        On the 2026-07-28 path the SDK refuses some calls before its handler runs (no
        ``params._meta``, an ``Mcp-Method`` or ``Mcp-Name`` header that differs from the body, a
        repeated routing header), so the toolbox, which charges every call it sees, never
        saw them: they were free, without end. Too late to refuse one; it counts all the same.
        """

        async def charging(message: Message) -> None:
            if message["type"] == "http.response.start" and not scope["state"].get(_REACHED_TOOLBOX):
                with contextlib.suppress(DomainError):
                    await self._toolbox.admit(caller)
            await send(message)

        return charging

    def _check_addressed(self, request: Request) -> None:
        """Refuse a request whose Host or Origin names another site (a rebound DNS name)."""
        if not self._origins.host_allowed(request.headers.get("host")):
            raise PermissionDenied(f"the Host header does not name this service ({self._public_url})")
        if not self._origins.origin_allowed(request.headers.get("origin")):
            raise PermissionDenied(f"requests from this Origin are not served; this service is {self._public_url}")

    async def _authenticate(self, request: Request) -> Caller:
        """Who is calling, from the bearer token; 401 with the RFC 9728 challenge otherwise."""
        principal = await challenged_principal(self._tokens, request, self._oauth, self._public_url)
        token = bearer_token(request)
        assert token is not None  # a missing or repeated token is refused above
        return Caller(token, principal, request_id=getattr(request.state, "request_id", None))

    def _check_scope(self, message: JSONRPCMessage, caller: Caller) -> None:
        """403 ``insufficient_scope`` for an OAuth token's tool call that needs a scope it lacks.

        An OAuth client answers that by asking its authorization server for the scope
        (step-up) and retrying; an ``mb_`` token cannot gain one, so its call is answered
        as before, with a ``permission_denied`` tool result.
        """
        if caller.principal.issuer is None or not isinstance(message, JSONRPCRequest) or message.method != CALL_TOOL:
            return
        params = message.params or {}
        arguments = params.get("arguments")
        permission = self._toolbox.permission_of(str(params.get("name")), arguments if isinstance(arguments, dict) else {})
        if permission is not None and not caller.principal.allows(permission):
            raise insufficient_scope(self._public_url, permission)


def _check_media_types(request: Request) -> None:
    """The body is JSON and the client takes JSON back (responses are never event streams here).

    MCP asks a client to send an ``Accept`` listing application/json and text/event-stream;
    one without the header is refused as the SDK refuses it. One that lists JSON with
    ``q=0`` (or only under a range with ``q=0``) does not take it (``media.accepts``);
    the SDK's own check reads the names only.
    """
    if essence(request.headers.get("content-type", "")) != JSON:
        raise UnsupportedMediaType("send the JSON-RPC message with Content-Type: application/json")
    accept = ", ".join(request.headers.getlist("accept"))
    if not accepts(accept, JSON):
        raise NotAcceptable("responses are application/json; send Accept: application/json, text/event-stream")
