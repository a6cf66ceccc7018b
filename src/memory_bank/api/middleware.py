"""The app's pure ASGI middlewares: request id, the head's size, call observation, HEAD as GET, the last-resort 500.

Pure ASGI, no ``BaseHTTPMiddleware``: that buffers streams (the JSON-lines export)
and costs a task per request.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import time

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory_bank.api.problems import CODE_BY_STATUS, PROBLEM_JSON, problem_response
from memory_bank.errors import BackendError, ErrorCode, RequestHeadTooLarge
from memory_bank.observability.audit import attributing
from memory_bank.observability.calls import CallAccounting, FinishedCall
from memory_bank.observability.metrics import OPERATION_STATE_KEY, REFUSED_STATE_KEY
from memory_bank.store.columns import utcnow

log = logging.getLogger(__name__)

#: A client-supplied id is echoed only when it is short and printable, so it cannot
#: inject into logs or headers.
_SAFE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")

#: Problem documents are small; anything bigger is not one we need to read.
MAX_PROBLEM_BYTES = 64 * 1024
#: Bytes of a request line and headers taken: what ``memory-bank serve`` tells h11 to buffer
#: (h11's own default), so a head over it is refused whether it arrived in one piece or many.
REQUEST_HEAD_BYTES = 16 * 1024


#: The ``scope["state"]`` key of the request's id (``request.state.request_id``).
REQUEST_ID_KEY = "request_id"


def new_request_id() -> str:
    return secrets.token_hex(8)


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
        state = scope.setdefault("state", {})
        # An id the server gave the request already stays: it refused the request before this ran
        # (api.unparsed), and the client has that id.
        request_id = state.get(REQUEST_ID_KEY) or (supplied if _SAFE_REQUEST_ID.match(supplied) else new_request_id())
        state[REQUEST_ID_KEY] = request_id

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", []).append((b"x-request-id", request_id.encode()))
            await send(message)

        await self.app(scope, receive, send_with_id)


class RequestHeadLimit:
    """431 for a request line and headers over :data:`REQUEST_HEAD_BYTES`.

    h11 refuses such a head only while it is still arriving (``api.unparsed``): one that
    came in a single read reached the app whatever its size, so a 60 KB header got a 401
    from curl and a 431 over a slow link. Counted as h11 counts them, on the wire, and
    answered as h11's refusal is, closing the connection."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and head_bytes(scope) > REQUEST_HEAD_BYTES:
            refusal = problem_response(Request(scope), head_too_large())
            refusal.headers["connection"] = "close"
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)


def head_too_large() -> RequestHeadTooLarge:
    return RequestHeadTooLarge(f"The request line and headers are over {REQUEST_HEAD_BYTES // 1024} KB: send a shorter URL or fewer, shorter headers.")


def head_bytes(scope: Scope) -> int:
    """The size of the request line and headers as sent: ``GET /path?query HTTP/1.1``, ``name: value`` lines, CRLFs."""
    query = scope.get("query_string", b"")
    line = len(scope["method"]) + 1 + len(scope.get("raw_path") or scope["path"].encode()) + (len(query) + 1 if query else 0) + 11
    return line + sum(len(name) + len(value) + 4 for name, value in scope["headers"]) + 2


class HeadAsGet:
    """Serve HEAD wherever GET is served: the GET's status and headers, without its body.

    HTTP asks a server that supports GET to support HEAD (RFC 9110 §9.3.2); FastAPI's
    routes answered it 405. Rather than a HEAD method on every route, the request is
    routed and answered as the GET it stands for, so it meets the same token check and
    is charged to the same budget (it costs what the GET costs: the GET runs), and its
    body is dropped here, whatever the server would do. The answer ends with its head:
    a streamed GET (an export) stops there, as the server then tells it the client is
    gone, where it had streamed on and been logged as cut short when ``curl -I`` closed.
    The method is HEAD again once answered, so the layers outside (the access log, the
    call record) report what came in. A path without GET stays 405, its ``Allow`` naming
    HEAD wherever it names GET.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        async def without_body(message: Message) -> None:
            if message["type"] == "http.response.start":
                await send(message)
                await send({"type": "http.response.body", "body": b"", "more_body": False})

        scope["method"] = "GET"
        try:
            await self.app(scope, receive, without_body)
        finally:
            scope["method"] = "HEAD"


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


class _Response:
    """The status and, for a problem document, the body as it goes out."""

    def __init__(self) -> None:
        self.status = 500  # an exception before any response start is a 500
        self.complete = False  # a stream that dies mid-way (e.g. an export) started as a 200
        self._problem: bytearray | None = None

    @property
    def success(self) -> bool:
        return self.status < 400 and self.complete

    def see(self, message: Message) -> None:
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            self.complete = True
        if message["type"] == "http.response.start":
            self.status = message["status"]
            headers = dict(message.get("headers", ()))
            if headers.get(b"content-type", b"").startswith(PROBLEM_JSON.encode()):
                self._problem = bytearray()
        elif message["type"] == "http.response.body" and self._problem is not None:
            if len(self._problem) < MAX_PROBLEM_BYTES:
                self._problem.extend(message.get("body", b""))

    def error_code(self) -> str | None:
        if self.success:
            return None
        if self.status < 400:
            return ErrorCode.backend_error.value
        try:
            code = json.loads(bytes(self._problem or b"")).get("code")
        except (ValueError, AttributeError):
            code = None
        fallback = ErrorCode.backend_error if self.status >= 500 else ErrorCode.invalid_params
        return str(code) if code else CODE_BY_STATUS.get(self.status, fallback).value


class CallObserver:
    """Observe every HTTP call once, when it is done, and hand it to ``observability.calls``.

    It reads what the inner layers leave on the scope: the matched route and its
    operationId (``scope["route"]``), the request id, the principal and any operation
    name an endpoint gave itself (``scope["state"]``), and the problem document sent.
    """

    def __init__(self, app: ASGIApp, *, accounting: CallAccounting) -> None:
        self.app = app
        self._accounting = accounting

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        requested_at = utcnow()
        started = time.perf_counter()
        response = _Response()

        async def observed_send(message: Message) -> None:
            response.see(message)
            await send(message)

        with attributing() as attribution:
            try:
                await self.app(scope, receive, observed_send)
            finally:
                route = scope.get("route")
                operation_id: str | None = getattr(route, "operation_id", None)
                named: str | None = scope.get("state", {}).get(OPERATION_STATE_KEY)
                refused: tuple[int, str] | None = scope.get("state", {}).get(REFUSED_STATE_KEY)
                status, error_code = refused or (response.status, response.error_code())
                self._accounting.finished(
                    FinishedCall(
                        operation=named or operation_id or str(getattr(route, "path", "unmatched")),
                        operation_id=operation_id,
                        status=status,
                        seconds=time.perf_counter() - started,
                        success=response.success and refused is None,
                        error_code=error_code,
                        requested_at=requested_at,
                        state=scope.get("state", {}),
                        agent_id=attribution.agent_id,
                    )
                )
