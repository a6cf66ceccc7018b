"""The ``memory-bank`` command: serve the API, mint bearer tokens, and the operator's data commands.

Output discipline: anything a script may capture (a token) goes alone to stdout;
hints, banners and errors go to stderr, so ``TOKEN=$(memory-bank token create ...)``
just works.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from memory_bank import __version__
from memory_bank.cli_agents import agent_app
from memory_bank.cli_db import db_app
from memory_bank.cli_search import search
from memory_bank.cli_serve import serve
from memory_bank.cli_support import ID_ARGUMENT, database, settings
from memory_bank.cli_tokens import token_list, token_revoke
from memory_bank.cli_transfer import export_memories, import_memories
from memory_bank.store.tokens import TokenStore

app = typer.Typer(help="Memory Bank: durable, searchable memory for AI agents.", no_args_is_help=True)
token_app = typer.Typer(help="Bearer tokens.", no_args_is_help=True)
app.add_typer(token_app, name="token")
app.add_typer(db_app, name="db")
app.add_typer(agent_app, name="agent")
app.command()(serve)
app.command("export")(export_memories)
app.command("import")(import_memories)
app.command("search")(search)
token_app.command("list")(token_list)
token_app.command("revoke", context_settings=ID_ARGUMENT)(token_revoke)

_stderr = Console(stderr=True, soft_wrap=True)


def _print_version(wanted: bool) -> None:
    if wanted:
        typer.echo(f"memory-bank {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Memory Bank: durable, searchable memory for AI agents."""


@token_app.command("create")
def token_create(
    org: Annotated[str, typer.Option(help="Organisation the token acts in.")],
    user: Annotated[str, typer.Option(help="User the token acts as.")],
    permissions: Annotated[str, typer.Option(help="Comma-separated, e.g. memory:read,memory:write.")],
    agent: Annotated[str | None, typer.Option(help="Agent the token acts as, if any.")] = None,
) -> None:
    """Mint a bearer token and print it alone on stdout (it is shown only once)."""
    granted = [p.strip() for p in permissions.split(",") if p.strip()]
    try:
        plaintext, _ = TokenStore(database()).create(org, user, agent, granted)
    except ValueError as exc:
        _stderr.print(f"[red]{escape(str(exc))}[/]")
        raise typer.Exit(2) from None
    typer.echo(plaintext)
    _stderr.print("Store it now: only its sha256 is kept. Send it as 'Authorization: Bearer <token>'.", style="dim")


@app.command()
def mcp() -> None:
    """Serve MCP over stdio as MEMORY_BANK_TOKEN (needs MEMORY_BANK_MCP_ALLOW_STDIO=true; never in production)."""
    import anyio

    from memory_bank.mcp.stdio import StdioRefused, serve_stdio

    try:
        anyio.run(serve_stdio, settings())
    except StdioRefused as exc:
        _stderr.print(f"[red]memory-bank mcp: {exc}[/]")
        raise typer.Exit(2) from None
