"""The ``memory-bank`` command: serve the API and mint bearer tokens.

Output discipline: anything a script may capture (a token) goes alone to stdout;
hints, banners and errors go to stderr, so ``TOKEN=$(memory-bank token create ...)``
just works.
"""

from __future__ import annotations

from typing import Annotated

import typer
import uvicorn
from rich.console import Console

from memory_bank.cli_agents import agent_app
from memory_bank.cli_db import db_app
from memory_bank.cli_search import search
from memory_bank.cli_tokens import token_list, token_revoke
from memory_bank.cli_transfer import export_memories, import_memories
from memory_bank.security.tokens import PERMISSIONS, TokenStore
from memory_bank.settings import Profile, Settings, get_settings
from memory_bank.store.database import open_database

app = typer.Typer(help="Memory Bank: durable, searchable memory for AI agents.", no_args_is_help=True)
token_app = typer.Typer(help="Bearer tokens.", no_args_is_help=True)
app.add_typer(token_app, name="token")
app.add_typer(db_app, name="db")
app.add_typer(agent_app, name="agent")
app.command("export")(export_memories)
app.command("import")(import_memories)
app.command("search")(search)
token_app.command("list")(token_list)
token_app.command("revoke")(token_revoke)

_stderr = Console(stderr=True, soft_wrap=True)

#: The identity ``serve`` mints a token for on a fresh development database.
DEV_IDENTITY = {"org_id": "dev", "user_id": "dev", "agent_id": "dev-agent"}


def _token_store(settings: Settings) -> TokenStore:
    return TokenStore(open_database(settings))


def _bootstrap_dev_token(settings: Settings, base_url: str) -> None:
    """On a development database without tokens, mint one so the first curl works."""
    tokens = _token_store(settings)
    if tokens.count():
        return
    plaintext, _ = tokens.create(**DEV_IDENTITY, permissions=sorted(PERMISSIONS))
    _stderr.print(f"[bold]Development token[/] (org dev, user dev, agent dev-agent, all permissions):\n{plaintext}")
    _stderr.print("Try it:", style="dim")
    _stderr.print(
        f"curl -s '{base_url}/v1/memory/search?q=hello' -H 'Authorization: Bearer {plaintext}'", highlight=False
    )


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port to listen on.")] = 8000,
) -> None:
    """Serve the REST API (and, in development, print a first token)."""
    settings = get_settings()
    if settings.env is Profile.development:
        reachable = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        _bootstrap_dev_token(settings, f"http://{reachable}:{port}")
    uvicorn.run("memory_bank.app:create_app", factory=True, host=host, port=port)


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
        plaintext, _ = _token_store(get_settings()).create(org, user, agent, granted)
    except ValueError as exc:
        _stderr.print(f"[red]{exc}[/]; known: {', '.join(sorted(PERMISSIONS))}")
        raise typer.Exit(2) from None
    typer.echo(plaintext)
    _stderr.print("Store it now: only its sha256 is kept. Send it as 'Authorization: Bearer <token>'.", style="dim")


@app.command()
def mcp() -> None:
    """Serve MCP over stdio as MEMORY_BANK_TOKEN (needs MEMORY_BANK_MCP_ALLOW_STDIO=true; never in production)."""
    import anyio

    from memory_bank.mcp.stdio import StdioRefused, serve_stdio

    try:
        anyio.run(serve_stdio, get_settings())
    except StdioRefused as exc:
        _stderr.print(f"[red]memory-bank mcp: {exc}[/]")
        raise typer.Exit(2) from None
