"""A ``tools/call`` answered in its own POST's task, without the SDK's per-request session.

For every stateless POST the SDK's transport starts a transport, a JSON-RPC
dispatcher and a server task joined by memory streams: what a session needs, paid
again for each request and costing about as much as the tool call's own work. A tool
call here needs none of it (responses are JSON: nothing streams, nothing calls back),
so it goes to the SDK's single-exchange driver (``serve_one``, the same request
handler and middleware the session would run) and its answer is written as the
transport writes it: the same JSON-RPC response, errors mapped by the SDK's own rule.
Every other message, and a protocol-version header the SDK routes elsewhere, takes
the SDK's full path.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import pydantic_core
from mcp.server.connection import Connection
from mcp.server.lowlevel import Server
from mcp.server.runner import serve_one
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.message import MessageMetadata, ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCRequest,
    RequestId,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.responses import Response

log = logging.getLogger(__name__)

CALL_TOOL = "tools/call"


@dataclass
class _Exchange:
    """The dispatch context of one request answered by one JSON body: no back-channel, no notifications."""

    transport: TransportContext
    request_id: RequestId
    message_metadata: MessageMetadata
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)
    can_send_request: bool = False

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None) -> None:
        """Dropped, as the JSON-response transport drops them: a JSON body carries only the answer."""

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Dropped likewise."""


def answered_here(message: JSONRPCMessage, request: Request) -> JSONRPCRequest | None:
    """``message`` when it is a tool call this module answers; None for the SDK's own path."""
    version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
    if not isinstance(message, JSONRPCRequest) or message.method != CALL_TOOL:
        return None
    return message if version is None or version in HANDSHAKE_PROTOCOL_VERSIONS else None


async def answer(server: Server[Any], lifespan_state: Any, message: JSONRPCRequest, request: Request) -> Response:
    """The HTTP response to one tool call, as the SDK's stateless JSON transport would write it."""
    version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER, DEFAULT_NEGOTIATED_VERSION)
    context = _Exchange(
        TransportContext(kind="streamable-http", can_send_request=False),
        message.id,
        ServerMessageMetadata(request_context=request),
    )
    try:
        result = await serve_one(
            server, context, message.method, message.params, connection=Connection.from_envelope(version, None, None),
            lifespan_state=lifespan_state,
        )
    except Exception as exc:
        error = handler_exception_to_error_data(exc)
        if error is None:  # the SDK's own catch-all for the 2025 transports: code 0, the message
            log.exception("handler for %r raised", message.method)
            error = ErrorData(code=0, message=str(exc))
        body = JSONRPCError(jsonrpc="2.0", id=message.id, error=error).model_dump_json(by_alias=True, exclude_unset=True).encode()
    else:
        # The result is already the SDK's wire dict: encoded as it is, the bytes ``JSONRPCResponse``
        # would write, without validating (copying) the whole result into that model first.
        body = pydantic_core.to_json({"jsonrpc": "2.0", "id": message.id, "result": result})
    return Response(body, 200, headers={"Content-Type": "application/json"})
