"""MCP over stdio (``memory-bank mcp``), for desktop clients that spawn a local process.

A spawned process has no HTTP request to carry a token, so it acts as the one token
in ``MEMORY_BANK_TOKEN``, checked before anything is served. It is off unless
``MEMORY_BANK_MCP_ALLOW_STDIO=true`` and refused in production: a local process
holding a long-lived token is a development convenience, not a deployment. Tool
calls still go through the app's REST path in process, so they are limited and
audited as over HTTP, and the token is verified on each call, so revoking it stops
the process's calls at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from memory_bank.app import create_app
from memory_bank.capabilities.execute.outcome import Caller
from memory_bank.errors import Unauthorized
from memory_bank.mcp.envelope import classify, not_finite
from memory_bank.mcp.server import build_server
from memory_bank.settings import Profile, Settings
from memory_bank.standard_json import non_finite


class StdioRefused(RuntimeError):
    """The stdio transport may not start; the message says which setting to change."""


def check_allowed(settings: Settings) -> str:
    """The token to act as, or ``StdioRefused`` naming what is wrong."""
    if settings.env is Profile.production:
        raise StdioRefused("the stdio MCP transport is never served in production (MEMORY_BANK_ENV=production)")
    if not settings.mcp_allow_stdio:
        raise StdioRefused("the stdio MCP transport is off; set MEMORY_BANK_MCP_ALLOW_STDIO=true to allow it")
    if not settings.token:
        raise StdioRefused("set MEMORY_BANK_TOKEN to the bearer token this process acts as (memory-bank token create)")
    if settings.token.split(" ", 1)[0].casefold() == "bearer":  # copied from an Authorization header
        raise StdioRefused("MEMORY_BANK_TOKEN holds the token alone: drop the 'Bearer ' in front of it")
    return settings.token


async def serve_stdio(settings: Settings) -> None:
    """Serve MCP on stdin/stdout until the client closes them.

    The app's lifespan runs around it, as under uvicorn, so the audit writer and the
    rate limiter behave as they do for HTTP.
    """
    token = check_allowed(settings)
    app = create_app(settings)
    try:
        principal = app.state.tokens.verify(token)
    except Unauthorized as expired:
        app.state.engine.dispose()
        raise StdioRefused(f"MEMORY_BANK_TOKEN is not a valid token: {expired.detail}") from None
    if principal is None:
        app.state.engine.dispose()
        raise StdioRefused("MEMORY_BANK_TOKEN is not a valid token (unknown, revoked or rotated)")
    # Verified once, at start: each tool call's REST request verifies the token again (revocation).
    caller = Caller(token, principal, verified_for_call=False)
    server = build_server(app.state.mcp_toolbox, lambda ctx: caller)
    async with app.router.lifespan_context(app):
        async with stdio_server() as (read_stream, write_stream), answering_malformed(read_stream, write_stream) as messages:
            await server.run(messages, write_stream, server.create_initialization_options())


@asynccontextmanager
async def answering_malformed(
    lines: MemoryObjectReceiveStream[SessionMessage | Exception], replies: MemoryObjectSendStream[SessionMessage]
) -> AsyncIterator[MemoryObjectReceiveStream[SessionMessage | Exception]]:
    """The messages read from stdin; a line that is not one JSON-RPC message is answered
    with the JSON-RPC error HTTP gives it (id null), not dropped while its sender waits.
    A message the reader took with a ``NaN`` or an ``Infinity`` in it is one too (-32700).

    One refusal of HTTP's is missing here: a request whose ``id`` is an object, an array, a
    float, a boolean or null (``envelope.BAD_ID``). The SDK's reader validates it as a
    notification and keeps no trace of the ``id``, so what reaches this relay is the same
    message an id-less one gives, which must not be answered; it goes unanswered, and the
    session goes on. Only the raw line tells them apart, and reading it means passing
    ``stdio_server`` a stdin of our own, which gives up the SDK's claim on fd 0 (diverted
    to the null device while serving, one transport per process).
    """
    send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

    async def relay() -> None:
        async with send:
            async for item in lines:
                if isinstance(item, ValidationError):
                    await replies.send(SessionMessage(classify(item).reply()))
                elif isinstance(item, SessionMessage) and non_finite(item.message.model_dump()):
                    await replies.send(SessionMessage(not_finite().reply()))
                else:
                    await send.send(item)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(relay)
        yield receive
        tasks.cancel_scope.cancel()
