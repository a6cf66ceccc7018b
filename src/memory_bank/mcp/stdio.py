"""MCP over stdio (``memory-bank mcp``), for desktop clients that spawn a local process.

A spawned process has no HTTP request to carry a token, so it acts as the one token
in ``MEMORY_BANK_TOKEN``, checked before anything is served. It is off unless
``MEMORY_BANK_MCP_ALLOW_STDIO=true`` and refused in production: a local process
holding a long-lived token is a development convenience, not a deployment. Tool
calls still go through the app's REST path in process, so they are limited and
audited as over HTTP, and the token is verified on each request, so revoking it stops
the process at once. The app factory is handed in by the CLI: the app is
built from the transports, so a transport does not import it.
"""

from __future__ import annotations

import json
import os
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import IO, Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from fastapi import FastAPI
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCRequest
from pydantic import ValidationError

from memory_bank.capabilities.execute.outcome import Caller
from memory_bank.errors import Unauthorized
from memory_bank.mcp.envelope import REPEATED_KEY, EnvelopeError, check_envelope, classify
from memory_bank.mcp.exchange import CALL_TOOL
from memory_bank.mcp.server import CallerOf, build_server
from memory_bank.security.principal import Principal
from memory_bank.settings import Profile, Settings


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


async def serve_stdio(settings: Settings, create_app: Callable[[Settings], FastAPI]) -> None:
    """Serve MCP on stdin/stdout, through the app ``create_app`` builds, until the client closes them.

    The app is built only once the settings allow the transport. Its lifespan runs
    around it, as under uvicorn, so the audit writer and the rate limiter behave as
    they do for HTTP.
    """
    token = check_allowed(settings)
    if sys.stdin is None or sys.stdout is None:  # started with <&- or >&-: a file opened next would get fd 0 or 1
        raise StdioRefused("stdin or stdout is closed: the client's messages come on stdin and the replies go to stdout")
    app = create_app(settings)
    try:
        principal = app.state.tokens.verify(token)
    except Unauthorized as expired:
        app.state.engine.dispose()
        raise StdioRefused(f"MEMORY_BANK_TOKEN is not a valid token: {expired.detail}") from None
    if principal is None:
        app.state.engine.dispose()
        raise StdioRefused("MEMORY_BANK_TOKEN is not a valid token (unknown, revoked or rotated)")
    caller = Caller(token, principal, verified_for_call=False)
    server = build_server(app.state.mcp_toolbox, checked_caller(app.state.tokens.verify, caller), metered=True)
    async with app.router.lifespan_context(app):
        with claimed_stdin() as stdin:
            async with stdio_server(stdin) as (read_stream, write_stream), answering_malformed(read_stream, write_stream, stdin.taken) as messages:
                await server.run(messages, write_stream, server.create_initialization_options())


def checked_caller(verify: Callable[[str], Principal | None], caller: Caller) -> CallerOf:
    """Who sends each request: ``caller``, whose token was verified at start and is verified again
    per request, so a revoked or rotated token gets nothing more (as over HTTP). A tool call's REST
    request verifies it itself (and answers a tool result the agent reads); any other request
    (``tools/list``, ``ping``) is verified here, and the metering refuses it as ``unauthorized``."""

    def caller_of(ctx: ServerRequestContext[Any, Any]) -> Caller:
        if ctx.method != CALL_TOOL and verify(caller.token) is None:
            raise Unauthorized("MEMORY_BANK_TOKEN is no longer valid (revoked or rotated)")
        return caller

    return caller_of


class Lines(anyio.AsyncFile[str]):
    """stdin as the SDK's reader iterates it, each line also kept in ``taken`` for the relay: the
    reader makes one item of each line, in order, so the relay's next item is the oldest line kept."""

    def __init__(self, fp: IO[str]) -> None:
        super().__init__(fp)
        self.taken: deque[str] = deque()

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in super().__aiter__():
            self.taken.append(line)
            yield line


@contextmanager
def claimed_stdin() -> Iterator[Lines]:
    """The client's lines, read from a private copy of fd 0 while fd 0 points at the null device.

    The SDK makes that claim itself only for a stdin it opens, and one passed in is the only way
    to see the raw line; without it, anything else in the process reading fd 0 would take lines
    meant for the session. fd 0 is restored on exit; the copy stays open, as a worker thread may
    still be blocked reading it.
    """
    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    text = open(wire, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115 - left open, as ``wire`` is; decoded as the SDK does
    try:
        yield Lines(text)
    finally:
        os.dup2(wire, 0)


@asynccontextmanager
async def answering_malformed(
    lines: MemoryObjectReceiveStream[SessionMessage | Exception],
    replies: MemoryObjectSendStream[SessionMessage],
    raw: deque[str],
) -> AsyncIterator[MemoryObjectReceiveStream[SessionMessage | Exception]]:
    """The messages read from stdin, less the lines HTTP refuses: each is answered with HTTP's
    JSON-RPC error (``refusal``), not dropped while its sender waits. ``raw`` holds the lines
    read and not yet relayed, oldest first (``Lines``).
    """
    send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

    async def relay() -> None:
        async with send:
            async for item in lines:
                refused = refusal(item, raw.popleft())
                if refused is None:
                    await send.send(item)
                else:
                    await replies.send(SessionMessage(refused.reply()))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(relay)
        yield receive
        tasks.cancel_scope.cancel()


def refusal(item: SessionMessage | Exception, line: str) -> EnvelopeError | None:
    """HTTP's error for ``line``, of which the SDK's reader made ``item``, or None to serve it.

    A line the reader could not take is named from its failure (``classify``). One it took is
    checked raw (``check_envelope``), as what it made shows no key given twice (it kept the later
    member), nor an ``"id"`` that is null, a float, a boolean, an object or an array (it made a
    notification of it), and a NaN only as a float. A key given twice in a request whose ``"id"``
    is named once answers that id: a stdio client matches an answer to its request by id alone.
    """
    if isinstance(item, ValidationError):
        return classify(item)
    if not isinstance(item, SessionMessage):
        return None
    try:
        check_envelope(line.encode())
    except EnvelopeError as refused:
        if refused.message == REPEATED_KEY and isinstance(item.message, JSONRPCRequest) and _names_id_once(line):
            refused.request_id = item.message.id
        return refused
    return None


def _names_id_once(line: str) -> bool:
    """Whether the line's object names ``"id"`` once (read as pairs, so that a repeat is seen)."""
    try:
        members = json.loads(line, object_pairs_hook=list)
    except ValueError:  # a number Python's parser will not read: no id is trusted
        return False
    return [key for key, _ in members].count("id") == 1
