"""The ``memory-bank`` command: serve the API, mint bearer tokens, and the operator's data commands.

Output discipline: anything a script may capture (a token) goes alone to stdout;
hints, banners and errors go to stderr, so ``TOKEN=$(memory-bank token create ...)``
just works. A package, one module per command or command group, so this module is
only the app that puts them together (``memory-bank = "memory_bank.cli:app"``).
"""

from __future__ import annotations

from typing import Annotated

import typer

from memory_bank import __version__
from memory_bank.cli import agents, db, mcp, search, serve, tokens, transfer
from memory_bank.cli.console import PlainErrors

app = typer.Typer(cls=PlainErrors, help="Memory Bank: durable, searchable memory for AI agents.", no_args_is_help=True)
app.add_typer(tokens.token_app, name="token")
app.add_typer(db.db_app, name="db")
app.add_typer(agents.agent_app, name="agent")
app.command()(serve.serve)
app.command("export")(transfer.export_memories)
app.command("import")(transfer.import_memories)
app.command("search")(search.search)
app.command()(mcp.mcp)


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
