"""``memory-bank agent ...``: register, list, deactivate and reactivate the agents of an org.

Same output discipline as the rest of the CLI: what a script captures (an agent id,
the list) goes to stdout, confirmations and errors to stderr.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated

import typer
from rich.markup import escape

from memory_bank.cli.console import ID_ARGUMENT, LIST_PAGE, checked_id, checked_name, database, fail, highlighted_stderr
from memory_bank.errors import ErrorCode
from memory_bank.store.agents import AgentStore
from memory_bank.store.keyset import every_page

agent_app = typer.Typer(help="Agents: who writes on a user's behalf.", no_args_is_help=True)


def _agents() -> AgentStore:
    return AgentStore(database())


@agent_app.command("create")
def agent_create(
    org: Annotated[str, typer.Option(help="Organisation the agent belongs to.")],
    name: Annotated[str, typer.Option(help="A readable name, e.g. the host or the tool.")],
) -> None:
    """Register an active agent and print its id alone on stdout."""
    checked_name(name)
    try:
        row = _agents().create(org, name)
    except ValueError as exc:
        highlighted_stderr.print(f"[red]{escape(str(exc))}[/]")
        raise typer.Exit(2) from None
    typer.echo(row.id)
    highlighted_stderr.print("Writes name it with agent_id, or bind a token to it: token create --agent <id>.", style="dim")


def _set_active(agent_id: str, org: str | None, *, active: bool) -> None:
    checked_id("agent", agent_id)
    checked_id("org", org)
    store = _agents()
    matched = (store.reactivate if active else store.deactivate)(agent_id, org)
    if not matched:
        raise fail(ErrorCode.not_found, f"no agent {agent_id!r}" + (f" in org {org!r}" if org else ""))
    if len(matched) > 1:
        orgs = ", ".join(sorted(row.org_id for row in matched))
        highlighted_stderr.print(f"[red]{escape(f'agent {agent_id!r} exists in several orgs ({orgs}); pass --org')}[/]")
        raise typer.Exit(2)
    state = "reactivated" if active else "deactivated"
    highlighted_stderr.print(escape(f"agent {agent_id!r} in org {matched[0].org_id!r} is {state}"))


AGENT_ID = Annotated[str, typer.Argument(help="The agent's id.", metavar="ID")]
AGENT_ORG = Annotated[str | None, typer.Option(help="Its organisation; needed when the id exists in several.")]


@agent_app.command("deactivate", context_settings=ID_ARGUMENT)
def agent_deactivate(agent_id: AGENT_ID, org: AGENT_ORG = None) -> None:
    """Refuse every further write by this agent (its memories stay)."""
    _set_active(agent_id, org, active=False)


@agent_app.command("reactivate", context_settings=ID_ARGUMENT)
def agent_reactivate(agent_id: AGENT_ID, org: AGENT_ORG = None) -> None:
    """Let a deactivated agent write again."""
    _set_active(agent_id, org, active=True)


@agent_app.command("list")
def agent_list(org: Annotated[str, typer.Option(help="Organisation to list.")]) -> None:
    """One line per agent: id, name, active or inactive, created at (tab-separated); when the org has
    none, a line saying so on stderr, as ``token list`` says it has no tokens (stdout stays empty)."""
    checked_id("org", org)
    listed = False
    for row in every_page(partial(_agents().page, org, limit=LIST_PAGE)):
        state = "active" if row.active else "inactive"
        typer.echo(f"{row.id}\t{row.name}\t{state}\t{row.created_at.isoformat()}")
        listed = True
    if not listed:
        highlighted_stderr.print(escape(f"No agents in org {org!r}, active or deactivated (agent create registers one)."))
