"""``memory-bank db upgrade`` and ``db embed``: schema and derived data of the configured database.

``upgrade``: every start does the same (``store.database.create_schema``); the command
exists so that a deployment can migrate before it rolls replicas out, and so an
operator can see which revision a database is at. The revision goes alone to stdout.

``embed``: vectors for the rows written while semantic search was off (or before it
existed), so that turning ``MEMORY_BANK_SEMANTIC_SEARCH`` on covers old memories
too; the count filled goes alone to stdout. Safe to interrupt and to rerun.
"""

from __future__ import annotations

import typer

from memory_bank.cli.console import database, highlighted_stderr, progress, settings
from memory_bank.store.database import create_schema, make_engine
from memory_bank.store.search.indexing import backfill_embeddings, missing_embeddings
from memory_bank.store.search.semantic import required_embedder

db_app = typer.Typer(help="Database schema.", no_args_is_help=True)


@db_app.command()
def upgrade() -> None:
    """Apply pending migrations and add the full-text index if missing; safe to repeat."""
    engine = make_engine(settings().database_url)
    try:
        before, after = create_schema(engine)
    finally:
        engine.dispose()
    typer.echo(after)
    highlighted_stderr.print("up to date" if before == after else f"upgraded from {before or 'an empty database'}", style="dim")


@db_app.command()
def embed() -> None:
    """Compute the semantic-search vector of every memory that has none (needs the semantic extra)."""
    with progress() as bar:
        embedder = required_embedder("embedding needs the model")
        engine = database()
        try:
            task = bar.add_task("Embedding memories", total=missing_embeddings(engine))
            filled = backfill_embeddings(engine, embedder, lambda n: bar.advance(task, n))
        finally:
            engine.dispose()
    typer.echo(filled)
