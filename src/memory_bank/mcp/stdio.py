"""MCP over stdio (``memory-bank mcp``), for desktop clients that spawn a local process.

A spawned process has no HTTP request to carry a token, so it acts as the one token
in ``MEMORY_BANK_TOKEN``, checked before anything is served. It is off unless
``MEMORY_BANK_MCP_ALLOW_STDIO=true`` and refused in production: a local process
holding a long-lived token is a development convenience, not a deployment. Tool
calls still go through the app's REST path in process, so they are authenticated,
limited and audited as over HTTP.
"""

from __future__ import annotations

from mcp.server.stdio import stdio_server

from memory_bank.app import create_app
from memory_bank.capabilities.execute import Caller
from memory_bank.mcp.server import build_server
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
    return settings.token


async def serve_stdio(settings: Settings) -> None:
    """Serve MCP on stdin/stdout until the client closes them.

    The app's lifespan runs around it, as under uvicorn, so the audit writer and the
    rate limiter behave as they do for HTTP.
    """
    token = check_allowed(settings)
    app = create_app(settings)
    principal = app.state.tokens.verify(token)
    if principal is None:
        app.state.engine.dispose()
        raise StdioRefused("MEMORY_BANK_TOKEN is not a valid token (unknown or revoked)")
    caller = Caller(token, principal)
    server = build_server(app.state.mcp_toolbox, lambda ctx: caller)
    async with app.router.lifespan_context(app):
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
