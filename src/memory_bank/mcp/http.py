"""MCP over streamable HTTP at ``/mcp``, inside the FastAPI app, behind the same bearer tokens.

Stateless mode: every POST is served on its own (no ``Mcp-Session-Id``, nothing kept
between requests), so any replica behind a plain load balancer can answer any request
(DESIGN §7), and responses are plain JSON (no SSE): the tools neither stream nor call
back. The session manager's task group lives for the app's lifespan (``running``); a
fresh manager per lifespan lets the same app be started more than once (tests do).

Authentication happens here, before the MCP SDK sees the request: a missing or bad
token is HTTP 401 with ``WWW-Authenticate: Bearer resource_metadata=...`` as the MCP
authorization spec asks, pointing at the RFC 9728 document served next to it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from memory_bank.capabilities.execute import Caller
from memory_bank.errors import ApiError, ErrorCode
from memory_bank.mcp.server import build_server
from memory_bank.mcp.tools import Toolbox
from memory_bank.problems import problem_response
from memory_bank.security.authorize import bearer_token
from memory_bank.security.tokens import PERMISSIONS, TokenStore

MCP_PATH = "/mcp"
RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource"
_CALLER = "mcp_caller"


def _caller_of(ctx: ServerRequestContext[Any, Any]) -> Caller:
    """The caller ``McpHttp`` authenticated, from the HTTP request this message came in."""
    if ctx.request is None:
        raise RuntimeError("an HTTP transport message came without its HTTP request")
    caller: Caller = getattr(ctx.request.state, _CALLER)
    return caller


class McpHttp:
    """The ``/mcp`` ASGI endpoint and the protected-resource document."""

    def __init__(self, toolbox: Toolbox, tokens: TokenStore, public_url: str) -> None:
        self._server = build_server(toolbox, _caller_of)
        self._tokens = tokens
        self._public_url = public_url.rstrip("/")
        self._manager: StreamableHTTPSessionManager | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Serve ``/mcp`` for as long as this is entered (the app's lifespan)."""
        manager = StreamableHTTPSessionManager(app=self._server, stateless=True, json_response=True)
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    def resource_metadata(self) -> dict[str, Any]:
        """RFC 9728 protected-resource metadata: what ``/mcp`` is and how to present a token."""
        return {
            "resource": self._public_url + MCP_PATH,
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
        request = Request(scope, receive)
        token = bearer_token(request)
        principal = await run_in_threadpool(self._tokens.verify, token) if token else None
        if token is None or principal is None:
            challenge = f'Bearer resource_metadata="{self._public_url}{RESOURCE_METADATA_PATH}"'
            if token is not None:
                challenge += ', error="invalid_token"'
            detail = "send Authorization: Bearer <token>" if token is None else "the bearer token is not valid"
            error = ApiError(ErrorCode.unauthorized, detail, headers={"WWW-Authenticate": challenge})
            await problem_response(request, error)(scope, receive, send)
            return
        if self._manager is None:
            error = ApiError(ErrorCode.backend_unavailable, "the MCP transport is not running")
            await problem_response(request, error)(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        state[_CALLER] = Caller(token, principal, request_id=state.get("request_id"))
        await self._manager.handle_request(scope, receive, send)
