"""``memory-bank search "..."``: the API's relevance search from a terminal, as a table.

Same ranking and the same visibility rule as ``GET /v1/memory/search`` (the store's
``search``), for the owner named by ``--org``/``--user``.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from memory_bank.cli.console import Org, User, fail, memory_store, owner, stderr, stdout
from memory_bank.errors import ErrorCode
from memory_bank.store.filters import MemoryFilter
from memory_bank.store.tables import MemoryRow

#: The spec's bounds for q and limit.
MAX_QUERY_CHARS = 2000
MAX_LIMIT = 100
#: Content is cut to this many characters in the table; `memory-bank export` has it all.
CONTENT_PREVIEW = 160
ID_WIDTH = 21
#: The content column's floor: below it a terminal is too narrow for any table.
MIN_MEMORY_WIDTH = 20


def _preview(content: str) -> str:
    """The content on one line, cut at a word (one that long is cut anyway) past the preview's length."""
    flat = " ".join(content.split())
    if len(flat) <= CONTENT_PREVIEW:
        return flat
    cut = flat[: CONTENT_PREVIEW - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"


def _memory_cell(row: MemoryRow) -> Text:
    """The content, wrapped at words, over a dim line of what else identifies it: tags, keypath, day.

    Three columns rather than six: at 80 columns the content keeps most of the width
    instead of being squeezed to a letter beside the tags and the keypath."""
    about = [", ".join(f"#{tag}" for tag in row.tags), row.keypath or "", f"{row.created_at:%Y-%m-%d}"]
    cell = Text(_preview(row.content))
    cell.append("\n" + " · ".join(part for part in about if part), style="dim")
    return cell


def search(
    query: Annotated[str, typer.Argument(help="What to look for, in plain words.")],
    org: Org,
    user: User,
    limit: Annotated[int, typer.Option(min=1, max=MAX_LIMIT, help="How many results at most.")] = 10,
    tag: Annotated[list[str] | None, typer.Option(help="Only memories with this tag (repeat for several).")] = None,
    project: Annotated[str | None, typer.Option(help="Only memories of this project.")] = None,
) -> None:
    """Search memories by relevance and print them as a table, most relevant first."""
    if not query.strip() or len(query) > MAX_QUERY_CHARS:
        raise fail(ErrorCode.invalid_params, f"the query must have 1 to {MAX_QUERY_CHARS} characters")
    where = MemoryFilter(tags=tuple(tag or ()), project_id=project)
    hits = memory_store().search(owner(org, user), where, query, limit)
    if not hits:
        stderr.print(escape(f"No memory of {user} in {org} matches “{query}”."))
        return
    table = Table(title=f"“{query}”", expand=True)
    table.add_column("score", no_wrap=True)
    table.add_column("memory", ratio=1, min_width=MIN_MEMORY_WIDTH)
    table.add_column("id", no_wrap=True, min_width=ID_WIDTH)  # whole, so it can be copied
    for row, score in hits:
        table.add_row(f"{score:.2f}", _memory_cell(row), row.id)
    stdout.print(table)
