"""``memory-bank export --out FILE`` and ``memory-bank import FILE``: backups and restores.

The file format is the API's (``GET /v1/memory/export``): one ``Memory`` document per
line, written by the same ``export_lines`` and read back by the same ``parse_records``,
so a file moves freely between the CLI and the API. Import keeps the API's rules (every
line is checked, against the file and the owner's memories, before anything is written;
agent ids not registered in the org are dropped) but not its request bounds: a file of
any size is read. Progress goes to stderr; the summary to stdout.
"""

from __future__ import annotations

import asyncio
import io
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, TextIO

import sqlalchemy as sa
import typer
from rich.markup import escape

from memory_bank.cli.console import Org, User, database, fail, memory_store, owner, progress, stderr, stdout
from memory_bank.errors import ErrorCode
from memory_bank.security.principal import Principal
from memory_bank.store.agents import AgentStore
from memory_bank.store.database import transaction
from memory_bank.store.filters import owned_by
from memory_bank.store.memories import MemoryStore
from memory_bank.store.tables import MemoryRow
from memory_bank.transfer import agent_ids, attribute, export_lines, parse_records

#: Bytes read per step while loading an import (and per progress update).
READ_CHUNK = 1 << 20


def _count(engine: sa.Engine, principal: Principal) -> int:
    """How many rows the export will write: the progress bar's total."""
    with transaction(engine) as session:
        return session.scalar(sa.select(sa.func.count()).select_from(MemoryRow).where(owned_by(principal))) or 0


async def _write(store: MemoryStore, principal: Principal, handle: TextIO, advance: Callable[[], None]) -> int:
    """Every line of the owner's export into ``handle``; returns how many were written."""

    written = 0
    with store.export_snapshot(principal) as page:

        async def next_page(after: MemoryRow | None, size: int) -> list[MemoryRow]:
            return page(after, size)

        async for line in export_lines(next_page):
            handle.write(line)
            written += 1
            advance()
    return written


def export_memories(
    out: Annotated[
        Path, typer.Option("--out", dir_okay=False, writable=True, help="The JSON-lines file to write; - for stdout.")
    ],
    org: Org,
    user: User,
) -> None:
    """Write every memory of one owner, superseded versions and deletions included, as JSON lines.

    A file appears only once it is complete (it is written beside it, then renamed).
    """
    principal = owner(org, user)
    with progress() as bar, _destination(out) as handle:
        engine = database()
        task = bar.add_task(f"Exporting {user} in {org}", total=_count(engine, principal))
        written = asyncio.run(_write(MemoryStore(engine), principal, handle, lambda: bar.advance(task)))
    # beside the lines when they went to a file; else apart from them (``/dev/stdout | jq``)
    (stdout if _is_file(out) else stderr).print(escape(f"exported {written} memories to {out}"))


def _to_stdout(out: Path) -> bool:
    return str(out) == "-"


def _is_file(out: Path) -> bool:
    """Whether ``out`` is a file to write (or make): not ``-``, a device or a pipe."""
    return not _to_stdout(out) and (out.is_file() or not out.exists())


@contextmanager
def _destination(out: Path) -> Iterator[TextIO]:
    """Where an export is written, as UTF-8.

    A file is written beside itself and renamed onto its name once complete; through a
    symlink, beside the link's target, so the link stays a link. What cannot be renamed onto
    (``-`` for stdout, a device or a pipe such as ``/dev/stdout``) is written straight: a rename
    would put a regular file in place of the link (``/dev/stdout`` for every later process)."""
    if _to_stdout(out):
        sys.stdout.flush()
        handle = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="")
        try:
            yield handle
        finally:
            handle.flush()
            handle.detach()
        return
    if not _is_file(out):
        with out.open("w", encoding="utf-8") as handle:
            yield handle
        return
    target = out.resolve() if out.is_symlink() else out
    partial = target.with_name(target.name + ".partial")
    try:
        with partial.open("w", encoding="utf-8") as handle:
            yield handle
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)  # only still there when the export failed


def import_memories(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, readable=True, help="A file written by export.")],
    org: Org,
    user: User,
) -> None:
    """Load a JSON-lines export into one owner's memories: all of it or, if any line is bad, nothing.

    Memories already there (same id) are skipped, so an import can be repeated; a tombstone
    of one still current there deletes it (the export was taken after a deletion). Agent ids
    that are not agents of the org are left out (the operator imports as no agent).
    """
    with progress() as bar:
        reading = bar.add_task(f"Reading {file.name} (bytes)", total=file.stat().st_size)
        chunks = []
        with file.open("rb") as handle:
            for chunk in iter(lambda: handle.read(READ_CHUNK), b""):
                chunks.append(chunk)
                bar.advance(reading, len(chunk))
        try:
            body = b"".join(chunks).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise fail(ErrorCode.invalid_params, f"{file} is not UTF-8 text (byte {exc.start})") from None
        checking = bar.add_task("Checking every line", total=None)
        records = parse_records(body, max_lines=None)
        registered = AgentStore(database()).registered(org, agent_ids(records))
        bar.update(checking, total=len(records), completed=len(records))
        writing = bar.add_task(f"Writing {len(records)} records", total=None)
        imported, skipped = memory_store().import_records(owner(org, user), attribute(records, registered, None))
        bar.update(writing, total=len(records), completed=len(records))
    stdout.print(f"imported {imported}, skipped {skipped} already present")
