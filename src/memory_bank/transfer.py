"""The JSON-lines format of export and import, shared by the API and the CLI.

An exported line is exactly one ``Memory`` document, so an export is readable by
anything that knows the spec and re-importable without extra fields (the store
re-derives version chains from ``supersedes_id``). Lines end at ``\\n`` and nowhere
else: U+0085, U+2028 and U+2029, which some line splitters also break at, are always
written escaped, so every export reads back line for line whatever splits it.

Import checks every line before anything is written and names each bad one
(``line 3``), so a file moves freely between ``GET /v1/memory/export``,
``memory-bank export`` and either import.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import replace
from datetime import UTC, datetime

from pydantic import ValidationError

from memory_bank import standard_json
from memory_bank.errors import FieldError, InvalidInput, PayloadTooLarge, field_errors
from memory_bank.generated import models
from memory_bank.store.importer import Record, invalid_lines, line_error
from memory_bank.store.tables import MemoryRow
from memory_bank.store.tags import with_tag_set

#: Rows fetched per database round trip while streaming an export.
EXPORT_BATCH = 500

#: The write-time bounds (content length, tag count, keypath pattern...) an
#: imported record must also meet, checked through MemoryCreate.
_WRITABLE = tuple(models.MemoryCreate.model_fields)

#: Characters JSON leaves unescaped that ``str.splitlines`` and some readers take for line ends.
_LINE_BREAKING = str.maketrans({"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})

#: What both backends store (MariaDB's DATETIME range), in UTC.
EARLIEST = datetime(1000, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
_TIMESTAMPS = ("created_at", "updated_at", "superseded_at", "deleted_at")

ExportPage = Callable[[MemoryRow | None, int], Awaitable[list[MemoryRow]]]


def export_line(row: MemoryRow) -> str:
    """One row as one ``Memory`` document and its ``\\n``."""
    memory = models.Memory.model_validate(row, from_attributes=True)
    return memory.model_dump_json().translate(_LINE_BREAKING) + "\n"


async def export_lines(next_page: ExportPage) -> AsyncIterator[str]:
    """Every row ``next_page`` yields, one ``Memory`` JSON document per line."""
    after: MemoryRow | None = None
    while True:
        rows = await next_page(after, EXPORT_BATCH)
        for row in rows:
            yield export_line(row)
        if len(rows) < EXPORT_BATCH:
            return
        after = rows[-1]


def _describe(exc: ValidationError) -> tuple[str, str]:
    """The first failing rule (a JSON Schema keyword) and every failure on the line."""
    found = field_errors([dict(e) for e in exc.errors()])
    return found[0].rule, "; ".join(f"{e.field or '/'}: {e.message}" for e in found)


class _OutOfRange(ValueError):
    pass


def _in_utc(name: str, value: datetime) -> datetime:
    """``value`` in UTC (no zone means UTC), refused unless both backends can store it."""
    try:
        moment = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except OverflowError:
        moment = None
    if moment is None or not EARLIEST <= moment <= LATEST:
        raise _OutOfRange(f"{name}: {value.isoformat()} is outside {EARLIEST.isoformat()} .. {LATEST.isoformat()} in UTC")
    return moment


def _parse_line(number: int, line: str) -> Record:
    memory = models.Memory.model_validate_json(line, strict=True)  # as REST reads a body: "1" is no version
    error = _standard_error(number, line)
    if error is not None:
        raise _NotStandardLine(error)
    fields = with_tag_set(memory.model_dump(exclude_none=True))
    models.MemoryCreate.model_validate({k: fields[k] for k in _WRITABLE if k in fields})
    fields.update((name, _in_utc(name, fields[name])) for name in _TIMESTAMPS if name in fields)
    return Record(number, fields)


def _unreadable(number: int, line: str, failure: ValidationError) -> FieldError | None:
    """The line's error when it is not JSON to a standard reader (a ``NaN`` that failed a bound)."""
    if any(e["type"] == "json_invalid" for e in failure.errors()):
        return None
    return _standard_error(number, line)


class _NotStandardLine(Exception):
    """A line the model took that ``_standard_error`` refuses."""

    def __init__(self, error: FieldError) -> None:
        self.error = error


def _standard_error(number: int, line: str) -> FieldError | None:
    """The error of a line a standard reader would not take, or would read otherwise: a ``NaN``,
    or a key given twice (the model keeps the later member, which can hide a NaN before it), as
    REST refuses such a body. Another fault a standard reader finds is left to the model."""
    try:
        standard_json.loads(line, unique_keys=True)
    except standard_json.RepeatedKeys as exc:
        return line_error(number, "uniqueKeys", str(exc))
    except standard_json.NotStandardJson as exc:
        return line_error(number, "json", str(exc))
    except ValueError:
        pass
    return None


def _blank(line: str) -> bool:
    """Only JSON's own whitespace makes a line blank (``str.strip`` would also eat U+2028)."""
    return not line.strip(" \t\r")


def parse_records(body: str, max_lines: int | None = None) -> list[Record]:
    """Every non-blank line as a record; too large over ``max_lines``, invalid naming each bad line or an empty input."""
    if max_lines is not None and body.count("\n") - body.endswith("\n") >= max_lines:
        raise PayloadTooLarge(f"an import is at most {max_lines} lines")
    records: list[Record] = []
    errors: list[FieldError] = []
    for number, line in enumerate(body.split("\n"), start=1):
        if _blank(line):
            continue
        try:
            records.append(_parse_line(number, line))
        except ValidationError as exc:
            errors.append(_unreadable(number, line, exc) or line_error(number, *_describe(exc)))
        except _OutOfRange as exc:
            errors.append(line_error(number, "range", str(exc)))
        except _NotStandardLine as exc:
            errors.append(exc.error)
    if errors:
        raise invalid_lines(errors)
    if not records:
        raise InvalidInput(
            "the import has no records",
            [FieldError("", "minLength", "send at least one line written by exportMemories")],
        )
    return records


def attribute(records: Sequence[Record], registered: set[str], importer: str | None) -> list[Record]:
    """Keep each record's ``agent_id`` if that agent is registered in the org; credit the rest to ``importer``.

    Every stored memory then names an agent of its own org (or none), never an id that a file made up.
    """
    return [
        r if r.fields.get("agent_id") in registered else replace(r, fields=r.fields | {"agent_id": importer})
        for r in records
    ]


def agent_ids(records: Iterable[Record]) -> set[str]:
    return {agent for r in records if (agent := r.fields.get("agent_id")) is not None}
