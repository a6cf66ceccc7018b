"""``memory-bank token create``, ``list`` and ``revoke``: mint a token, see which exist, stop one.

Only ids and metadata are listed; the plaintext is never stored, so it cannot be.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from memory_bank.cli.console import ID_ARGUMENT, database, fail, highlighted_stderr, plain_errors, stderr, stdout
from memory_bank.errors import ErrorCode
from memory_bank.store.tokens import TokenStore

token_app = typer.Typer(help="Bearer tokens.", no_args_is_help=True)

ID_WIDTH = 21
#: A day, YYYY-MM-DD: the widest line of the created/revoked column.
WHEN_WIDTH = 10


def _when(created: datetime, revoked: datetime | None) -> str:
    """Day over time, so the column stays ten characters wide (and the revocation under it)."""
    lines = [f"{created:%Y-%m-%d}", f"{created:%H:%M}"]
    if revoked is not None:
        lines += ["revoked", f"{revoked:%Y-%m-%d}", f"{revoked:%H:%M}"]
    return "\n".join(lines)


@token_app.command("list")
def token_list(
    org: Annotated[str | None, typer.Option(help="Only this organisation's tokens.")] = None,
    revoked: Annotated[bool, typer.Option("--revoked", help="Also show revoked tokens.")] = False,
) -> None:
    """List tokens, oldest first: id, org, user, agent, permissions, when made and revoked.

    Four columns that fit 80 characters: the id and each permission are never broken,
    the owner's three names share one column, one a line."""
    with plain_errors():
        rows = TokenStore(database()).listed(org, revoked=revoked)
    if not rows:
        stderr.print("No tokens." if revoked else "No live tokens (--revoked shows revoked ones).")
        return
    table = Table(show_lines=True)  # rows span several lines: rules keep them apart
    table.add_column("id", no_wrap=True, min_width=ID_WIDTH)  # whole, so it can be passed to revoke
    table.add_column("org / user / agent", overflow="fold")
    table.add_column("permissions", no_wrap=True)  # each whole, one a line
    table.add_column("created, revoked (UTC)" if revoked else "created (UTC)", min_width=WHEN_WIDTH)
    for row in rows:
        owner = "\n".join(part for part in (row.org_id, row.user_id, row.agent_id) if part)
        table.add_row(row.id, owner, "\n".join(row.permissions), _when(row.created_at, row.revoked_at))
    stdout.print(table)


@token_app.command("revoke", context_settings=ID_ARGUMENT)
def token_revoke(token_id: Annotated[str, typer.Argument(metavar="ID", help="The token's id, from `token list`.")]) -> None:
    """Stop a token from authenticating, at once and for good."""
    with plain_errors():
        revoked = TokenStore(database()).revoke(token_id)
    if not revoked:
        raise fail(ErrorCode.not_found, f"no live token has the id {token_id}")
    stderr.print(f"Revoked {token_id}.")


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
        highlighted_stderr.print(f"[red]{escape(str(exc))}[/]")
        raise typer.Exit(2) from None
    typer.echo(plaintext)
    highlighted_stderr.print("Store it now: only its sha256 is kept. Send it as 'Authorization: Bearer <token>'.", style="dim")
