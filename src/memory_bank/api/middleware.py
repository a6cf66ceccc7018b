"""Pure ASGI middleware (no BaseHTTPMiddleware: it buffers streams and costs a task per request)."""

from __future__ import annotations

import logging
import re
import secrets

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory_bank.api.problems import problem_response
from memory_bank.errors import BackendError

log = logging.getLogger(__name__)

#: A client-supplied id is echoed only when it is short and printable, so it cannot
#: inject into logs or headers.
_SAFE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


class RequestIdMiddleware:
    """Give every request an id (the client's ``X-Request-ID`` or a new one).

    It is stored on ``request.state.request_id`` for problem documents and audit
    events, and echoed in the response so a client can quote it in a bug report.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        supplied = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        request_id = supplied if _SAFE_REQUEST_ID.match(supplied) else secrets.token_hex(8)
        scope.setdefault("state", {})["request_id"] = request_id

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", []).append((b"x-request-id", request_id.encode()))
            await send(message)

        await self.app(scope, receive, send_with_id)


class UnexpectedErrorMiddleware:
    """Answer an exception nothing else handled with the 500 problem document, as a normal response.

    Starlette's own last resort sends the handler's response and then re-raises, and the
    server answers a re-raised exception by closing the connection: a keep-alive client
    would lose its connection to one bad request. Caught here, below that layer, the
    exception ends as a response and the connection stays open. Once a response has
    started (a stream that fails halfway) nothing truthful can be sent, so it re-raises.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            if started:
                raise
            request = Request(scope)
            log.exception("unexpected failure serving %s %s", request.method, request.url.path)
            response = problem_response(request, BackendError("unexpected server error"))
            await response(scope, receive, send)
