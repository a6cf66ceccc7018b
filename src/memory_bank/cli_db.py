"""``memory-bank db upgrade``: bring the configured database to the current schema.

Every start does the same (``store.database.create_schema``); the command exists so
that a deployment can migrate before it rolls replicas out, and so an operator can
see which revision a database is at. The revision goes alone to stdout.
"""

from __future__ import annotations

import typer
from rich.console import Console

from memory_bank.settings import get_settings
from memory_bank.store.database import create_schema, make_engine

db_app = typer.Typer(help="Database schema.", no_args_is_help=True)

_stderr = Console(stderr=True, soft_wrap=True)


@db_app.command()
def upgrade() -> None:
    """Apply pending migrations and add the full-text index if missing; safe to repeat."""
    engine = make_engine(get_settings().database_url)
    try:
        before, after = create_schema(engine)
    finally:
        engine.dispose()
    typer.echo(after)
    _stderr.print("up to date" if before == after else f"upgraded from {before or 'an empty database'}", style="dim")
