"""``memory-bank token create``, ``list``, ``rotate`` and ``revoke``: mint a token, see which exist, renew or stop one.

Only ids and metadata are listed (with the visible prefix that tells tokens apart); the
plaintext is never stored, so it cannot be. These commands work on the database
directly, which is how the first admin token of an org is made; after that, the admin
API does the same over HTTP and MCP.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from functools import partial
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from memory_bank.cli.console import (
    ID_ARGUMENT,
    LIST_PAGE,
    checked_id,
    checked_name,
    checked_token_id,
    database,
    fail,
    highlighted_stderr,
    stderr,
    stdout,
)
from memory_bank.errors import ErrorCode
from memory_bank.generated.spec import SPEC
from memory_bank.security.tokens import PERMISSIONS
from memory_bank.store.agents import AgentStore
from memory_bank.store.columns import utcnow
from memory_bank.store.keyset import every_page
from memory_bank.store.tables import TokenRow
from memory_bank.store.tokens import TokenStore

token_app = typer.Typer(help="Bearer tokens.", no_args_is_help=True)

ID_WIDTH = 21
#: A day, YYYY-MM-DD: the widest line of the dates column.
WHEN_WIDTH = 10

_UNITS = {"m": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}
_DURATION = re.compile(r"^\s*([1-9][0-9]{0,5})\s*([mhdw])\s*$")

#: The longest lifetime the admin API grants a token: the spec's ``expires_in_seconds`` maximum,
#: which the API's request model enforces too.
LONGEST_LIFETIME = timedelta(seconds=SPEC["components"]["schemas"]["TokenCreate"]["properties"]["expires_in_seconds"]["maximum"])

STORE_IT = "Store it now: only its sha256 is kept. Send it as 'Authorization: Bearer <token>'."


def parse_duration(text: str) -> timedelta:
    """``30d``, ``12h``, ``90m`` or ``2w``, at most ``LONGEST_LIFETIME``; ``typer.BadParameter`` otherwise."""
    match = _DURATION.match(text)
    if match is None:
        raise typer.BadParameter(f"{text!r} is not a duration such as 30d, 12h, 90m or 2w")
    duration = int(match.group(1)) * _UNITS[match.group(2)]
    if duration > LONGEST_LIFETIME:
        raise typer.BadParameter(f"{text!r} is longer than a token may live (at most {LONGEST_LIFETIME.days}d)")
    return duration


def _dates(row: TokenRow) -> str:
    """Each moment as day over time, so the column stays ten characters wide."""
    moments = [("", row.created_at), ("expires", row.expires_at), ("used", row.last_used_at), ("revoked", row.revoked_at)]
    lines: list[str] = []
    for label, moment in moments:
        if moment is not None:
            lines += [label] if label else []
            lines += [f"{moment:%Y-%m-%d}", f"{moment:%H:%M}"]
    return "\n".join(lines)


def _label(row: TokenRow) -> str:
    """The id (whole, on its own line, so it can be passed to revoke), then what tells the token apart."""
    prefix = f"{row.prefix}…" if row.prefix else "(no prefix)"
    return "\n".join(part for part in (row.id, prefix, row.name) if part)


@token_app.command("list")
def token_list(
    org: Annotated[str | None, typer.Option(help="Only this organisation's tokens.")] = None,
    revoked: Annotated[bool, typer.Option("--revoked", help="Also show revoked tokens.")] = False,
) -> None:
    """List tokens, oldest first: id, prefix and name, owner, permissions, when made, expiring, last used.

    Four columns that fit 80 characters: the id and each permission are never broken,
    the owner's three names share one column, one a line."""
    checked_id("org", org)
    rows = list(every_page(partial(TokenStore(database()).page, org, revoked=revoked, limit=LIST_PAGE)))
    if not rows:
        stderr.print("No tokens." if revoked else "No live tokens (--revoked shows revoked ones).")
        return
    table = Table(show_lines=True)  # rows span several lines: rules keep them apart
    table.add_column("id, prefix, name", overflow="fold", min_width=ID_WIDTH)
    table.add_column("org / user / agent", overflow="fold")
    table.add_column("permissions", no_wrap=True)  # each whole, one a line
    table.add_column("created (UTC)", min_width=WHEN_WIDTH)
    for row in rows:
        owner = "\n".join(part for part in (row.org_id, row.user_id, row.agent_id) if part)
        # Text, not str: a str cell is read as markup, so a name or id holding "[conceal]"
        # or "[b]" would hide text or list "ac[b]me" as "acme".
        table.add_row(Text(_label(row)), Text(owner), "\n".join(row.permissions), _dates(row))
    stdout.print(table)


@token_app.command("revoke", context_settings=ID_ARGUMENT)
def token_revoke(token_id: Annotated[str, typer.Argument(metavar="ID", help="The token's id, from `token list`.")]) -> None:
    """Stop a token from authenticating, at once and for good."""
    checked_token_id(token_id)
    revoked = TokenStore(database()).revoke(token_id)
    if not revoked:
        raise fail(ErrorCode.not_found, f"no live token has the id {token_id}")
    stderr.print(f"Revoked {token_id}.")


@token_app.command("rotate", context_settings=ID_ARGUMENT)
def token_rotate(token_id: Annotated[str, typer.Argument(metavar="ID", help="The token's id, from `token list`.")]) -> None:
    """Give a token a new secret, printed alone on stdout; the old secret stops working at once."""
    checked_token_id(token_id)
    rotated = TokenStore(database()).rotate(token_id)
    if rotated is None:
        raise fail(ErrorCode.not_found, f"no live token has the id {token_id}")
    typer.echo(rotated[0])
    highlighted_stderr.print(f"Rotated {token_id}; same grants and expiry. {STORE_IT}", style="dim")


@token_app.command("create")
def token_create(
    org: Annotated[str, typer.Option(help="Organisation the token acts in.")],
    user: Annotated[str, typer.Option(help="User the token acts as.")],
    permissions: Annotated[str, typer.Option(help="Comma-separated, e.g. memory:read,memory:write.")],
    agent: Annotated[str | None, typer.Option(help="Agent the token acts as, if any.")] = None,
    name: Annotated[str | None, typer.Option(help="What the token is for, shown by `token list`.")] = None,
    expires_in: Annotated[
        timedelta | None,
        typer.Option(parser=parse_duration, metavar="DURATION", help="Lifetime, e.g. 30d, 12h, 2w [default: never expires]."),
    ] = None,
) -> None:
    """Mint a bearer token: the token alone on stdout (shown only once), its id on stderr."""
    granted = [p.strip() for p in permissions.split(",") if p.strip()]
    if not granted:  # a token that may call nothing but the listing of what it may call is a mistake
        known = ", ".join(sorted(PERMISSIONS))
        highlighted_stderr.print(f"[red]--permissions names no permission; give at least one of {escape(known)}[/]")
        raise typer.Exit(2)
    checked_name(name)
    expires_at: datetime | None = None if expires_in is None else utcnow() + expires_in
    engine = database()
    try:
        new_agent = agent is not None and AgentStore(engine).find(org, agent) is None
        plaintext, row = TokenStore(engine).create(org, user, agent, granted, name=name, expires_at=expires_at)
    except ValueError as exc:
        highlighted_stderr.print(f"[red]{escape(str(exc))}[/]")
        raise typer.Exit(2) from None
    typer.echo(plaintext)
    stderr.print(f"id {row.id}")
    if new_agent:  # a misspelt --agent made an agent of its own without a word
        stderr.print(escape(f"agent {agent!r} was new in org {org!r}: registered it (memory-bank agent list --org {org} lists them)"))
    highlighted_stderr.print(STORE_IT, style="dim")
