"""The low-level MCP ``Server`` over a ``Toolbox``, for any transport.

The low-level server (not FastMCP) is used so the catalog's JSON Schemas are served
byte for byte as the spec produced them, with no re-derivation from Python types.
Who is calling is a transport matter, so the transport passes ``caller_of``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from memory_bank import __version__
from memory_bank.capabilities.execute.outcome import Caller
from memory_bank.mcp.metering import Metering
from memory_bank.mcp.tools import Toolbox, UnknownTool
from memory_bank.observability.metrics import MCP_OPERATION, name_operation

#: How the transport says who sent a request.
CallerOf = Callable[[ServerRequestContext[Any, Any]], Caller]

#: An unknown tool's name is quoted back only this far: the name is the client's input.
SHOWN_NAME_CHARS = 64


def _shown(name: str) -> str:
    return name if len(name) <= SHOWN_NAME_CHARS else name[:SHOWN_NAME_CHARS] + "..."


def build_server(toolbox: Toolbox, caller_of: CallerOf, *, metered: bool) -> Server[Any]:
    """The server; ``metered``: it charges the requests ``metering`` leaves to the transport (stdio's way;
    ``/mcp`` charges them before the server sees them, to refuse them with an HTTP status)."""

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=toolbox.tools_for(caller_of(ctx)))

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            outcome = await toolbox.call(params.name, params.arguments or {}, caller_of(ctx))
        except UnknownTool as unknown:
            message = f"Unknown tool: {_shown(params.name)}; {unknown.advice}"
            raise MCPError(code=types.INVALID_PARAMS, message=message) from None
        if ctx.request is not None:  # over HTTP; the name is one the toolbox serves, so labels stay bounded
            name_operation(ctx.request.scope, f"{MCP_OPERATION}:{params.name}")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=outcome.text)],
            structured_content=outcome.structured,
            is_error=outcome.is_error,
        )

    server = Server(
        "memory-bank",
        version=__version__,
        title="Memory Bank",
        instructions=toolbox.instructions,
        get_tool_input_schema=toolbox.input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    if metered:
        server.middleware.append(Metering(toolbox.admit, caller_of))
    return server
