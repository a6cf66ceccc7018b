"""``memory-bank mcp``: MCP over stdio, for a local client that starts the server itself."""

from __future__ import annotations

from functools import partial

import typer

from memory_bank.cli.console import highlighted_stderr, settings


def mcp() -> None:
    """Serve MCP over stdio as MEMORY_BANK_TOKEN (needs MEMORY_BANK_MCP_ALLOW_STDIO=true; never in production)."""
    import anyio

    from memory_bank.app import create_app
    from memory_bank.mcp.stdio import StdioRefused, serve_stdio

    try:
        anyio.run(serve_stdio, settings(), partial(create_app, stdio=True))
    except StdioRefused as exc:
        highlighted_stderr.print(f"[red]memory-bank mcp: {exc}[/]")
        raise typer.Exit(2) from None
