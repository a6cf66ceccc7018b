"""What the commands share: the owner they act as, the store they open, and failures told
in plain words with their code (``PlainErrors``, around every command).

These commands talk to the store directly, on the database the settings name, as the
owner given by ``--org``/``--user``, like ``token create`` already does. They are the
operator's tools: a backup or a restore must work while the service is down or before
it first starts, from SQLite into MySQL by switching ``MEMORY_BANK_DATABASE_URL``, and
a 100 000-line restore must not spend an org's per-minute request budget or need a
token minted first. The API stays the way for agents and remote clients.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Annotated, Any

import typer
from pydantic import TypeAdapter, ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from typer.core import TyperGroup

from memory_bank.errors import DomainError, ErrorCode, field_errors
from memory_bank.generated import models
from memory_bank.owner_ids import check_owner_id
from memory_bank.security.principal import Principal
from memory_bank.security.tokens import PERMISSIONS
from memory_bank.settings import Settings, get_settings, setting_errors, unknown_variables
from memory_bank.store.columns import ID_LENGTH
from memory_bank.store.database import open_database
from memory_bank.store.keyset import generated_id
from memory_bank.store.memories import MemoryStore
from memory_bank.store.search.semantic import SemanticExtraMissing, embedder_for


class _Console(Console):
    """A rich console whose broken pipe is ``plain_errors``' to end (quietly, ``READER_GONE``):
    rich's own ``on_broken_pipe`` raised ``SystemExit(1)`` past it, so ``token list | head -1``
    ended 1 where ``agent list | head -1`` ended 141."""

    def on_broken_pipe(self) -> None:
        self.quiet = True  # nothing more is written to a reader that is gone
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


stderr = _Console(stderr=True, soft_wrap=True, highlight=False)
stdout = _Console(soft_wrap=True, highlight=False)
#: The token, agent, db and mcp commands' stderr: rich's highlighting on, as they have
#: always printed (numbers and quoted names coloured on a terminal).
highlighted_stderr = _Console(stderr=True, soft_wrap=True)

Org = Annotated[str, typer.Option(help="Organisation whose memories these are.")]
User = Annotated[str, typer.Option(help="User whose memories these are.")]

#: Context settings of a command whose argument is an id: an id made before ids stopped
#: beginning with ``-`` is still read as the argument rather than as an unknown option.
ID_ARGUMENT = {"ignore_unknown_options": True}

#: Rows read per query by ``token list`` and ``agent list``: they follow the store's
#: cursors as an API client would, so no list is read in one unbounded query.
LIST_PAGE = 100

#: Field errors shown under a failure; the rest are counted.
SHOWN_FIELD_ERRORS = 10

#: The exit status once the reader of stdout is gone (``memory-bank agent list | head -1``, an MCP
#: client that quit): 128 + SIGPIPE, what a shell reports for ``grep`` or ``cat`` ended so, where
#: 1 would say a failure this CLI explains. (SIGPIPE is 13 wherever it exists; Windows has none.)
READER_GONE = 128 + 13


def refused(why: str) -> typer.Exit:
    """Say why an argument is refused on stderr; the caller raises the returned Exit(2), a usage error."""
    stderr.print(f"[red]{escape(why)}[/]")
    return typer.Exit(2)


def checked_id(kind: str, value: str | None) -> None:
    """An org, user or agent id given on the command line, or exit 2 saying what is wrong with it.

    The same rules as the admin API's (``check_owner_id``): an id with an invisible
    character in it would list like another id and name a different owner.
    """
    if value is None:
        return
    try:
        check_owner_id(kind, value)
    except ValueError as exc:
        raise refused(str(exc)) from None


def checked_token_id(value: str) -> None:
    """A token id given on the command line, or exit 2: only the ids this server generates can
    name a token (``generated_id``), and other text (a lone surrogate, which is what a
    non-UTF-8 argument becomes) must not reach the database, which cannot encode it."""
    try:
        generated_id(value)
    except ValueError:
        raise refused(f"{value!r} is not a token id: `token list` shows them, {ID_LENGTH} letters, digits, '-' or '_'") from None


def checked_name(value: str | None) -> None:
    """A token or agent name given on the command line, or exit 2 saying what it lacks: the
    admin API's rule (the spec's ``Name``), since ``token list`` and ``agent list`` print it."""
    if value is None:
        return
    try:
        TypeAdapter(models.Name).validate_python(value)
    except ValidationError as exc:
        (error,) = field_errors([dict(e) for e in exc.errors()])
        stderr.print(f"[red]--name {escape(error.message)}[/]")
        raise typer.Exit(2) from None


def owner(org: str, user: str) -> Principal:
    """The memories' owner, as a principal that may do everything (the operator is trusted).

    The ids are checked as token ids are (``check_owner_id``): ``--org "acme "`` would
    otherwise act on org ``acme`` on MariaDB and on an empty org on SQLite."""
    checked_id("org", org)
    checked_id("user", user)
    return Principal(token_id="cli", org_id=org, user_id=user, agent_id=None, permissions=PERMISSIONS)


def settings() -> Settings:
    """The settings from the environment; a bad variable is one line each and exit 2, not a traceback,
    and a ``MEMORY_BANK_*`` variable that is no setting one warning each (``unknown_variables``)."""
    _warn_of_unknown_variables()
    try:
        return get_settings()
    except ValidationError as exc:
        for line in setting_errors(exc):
            stderr.print(escape(line))
        raise typer.Exit(2) from None
    except OSError as exc:  # the default database's folder cannot be made
        stderr.print(escape(f"MEMORY_BANK_DATABASE_URL: unset, and the user data directory fails: {exc}"))
        raise typer.Exit(2) from None


@cache
def _warn_of_unknown_variables() -> None:
    """Once a process: a command reads its settings several times."""
    for line in unknown_variables(os.environ):
        stderr.print(escape(f"warning: {line}"))


def database() -> Engine:
    """The database the settings name (``MEMORY_BANK_DATABASE_URL``), migrated to the current schema."""
    return open_database(settings())


def memory_store() -> MemoryStore:
    """The store on ``database()``, with the embedding model when the settings turn semantic
    search on: rows the CLI imports get vectors and its searches rank like the service's."""
    return MemoryStore(database(), embedder_for(settings()), settings().vector_cache_bytes, settings().lexical_cache_bytes)


def progress() -> Progress:
    """Progress on stderr, so stdout stays clean for what a script captures."""
    return Progress(
        SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=stderr
    )


def fail(code: ErrorCode, detail: str) -> typer.Exit:
    """Say what failed and its code on stderr; the caller raises the returned Exit(1)."""
    stderr.print(f"[red]error ({code.value}):[/] {escape(detail)}")  # a detail is text, not markup
    return typer.Exit(1)


@contextmanager
def plain_errors() -> Iterator[None]:
    """Turn the failures a command can meet into one line (plus field errors), never a traceback."""
    try:
        yield
    except DomainError as exc:
        for error in exc.errors[:SHOWN_FIELD_ERRORS]:
            stderr.print(escape(f"  {error.field or '/'}: {error.message} ({error.rule})"))
        if len(exc.errors) > SHOWN_FIELD_ERRORS:
            stderr.print(f"  ... and {len(exc.errors) - SHOWN_FIELD_ERRORS} more")
        raise fail(exc.code, exc.detail) from None
    except SemanticExtraMissing as exc:  # a setting asks for what is not installed, as a bad setting is told
        stderr.print(escape(str(exc)))
        raise typer.Exit(2) from None
    except OperationalError as exc:
        raise fail(ErrorCode.backend_unavailable, f"the database is unreachable: {exc.orig}") from None
    except SQLAlchemyError as exc:
        raise fail(ErrorCode.backend_error, f"the database failed: {exc}") from None
    except (BrokenPipeError, BaseExceptionGroup) as exc:
        if not _reader_gone(exc):
            raise
        raise _quietly() from None
    except OSError as exc:
        if exc.filename is None:  # a read or write of stdin, stdout, an open file ... (its name unknown)
            raise fail(ErrorCode.backend_error, f"input or output failed: {exc}") from None
        raise fail(ErrorCode.invalid_params, f"{exc.filename}: {exc.strerror or exc}") from None


def _reader_gone(exc: BaseException) -> bool:
    """Whether ``exc`` is a write to a pipe nobody reads any more, alone or all a task group raised
    (``memory-bank mcp`` writes its replies from an anyio task). The commands write no pipe but
    their stdout and stderr: the files of ``export`` and ``import`` are opened by name, and the
    database and Redis clients raise errors of their own."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_reader_gone(inner) for inner in exc.exceptions)
    return isinstance(exc, BrokenPipeError)


def _quietly() -> typer.Exit:
    """End as Python advises once stdout's reader is gone ("Note on SIGPIPE" in its ``signal``
    module): say nothing, as nobody reads, and point stdout at the null device, so that the flush at
    exit does not fail again with a traceback."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
    os.close(null)
    return typer.Exit(READER_GONE)


class PlainErrors(TyperGroup):
    """The ``memory-bank`` command group: whichever command runs, it runs inside ``plain_errors``,
    so no command can forget to (``token create`` and the agent commands printed a traceback
    when the database was unreachable, while ``token list`` said so in one line)."""

    def invoke(self, ctx: Any) -> Any:  # Any: the Context typer declares is in its private, vendored click
        with plain_errors():
            return super().invoke(ctx)
