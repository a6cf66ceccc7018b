"""The JSON-lines format of export and import.

An exported line is exactly one ``Memory`` document, so an export is readable by
anything that knows the spec and re-importable without extra fields (the store
re-derives version chains from ``supersedes_id``). Import reads the whole body
first and rejects it, naming every bad line, before anything is written.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

from pydantic import ValidationError

from memory_bank.errors import ApiError, ErrorCode, FieldError
from memory_bank.generated import models
from memory_bank.handlers.convert import to_memory
from memory_bank.problems import field_errors
from memory_bank.store.importer import Record, invalid_lines, line_error
from memory_bank.store.tables import MemoryRow

#: Lines in one import. Its size in characters is the spec's ``maxLength`` on the
#: body, refused while it is read (``runtime.read_text_body``); this caps the work.
MAX_IMPORT_LINES = 100_000

#: Rows fetched per database round trip while streaming an export.
EXPORT_BATCH = 500

#: The write-time bounds (content length, tag count, keypath pattern...) an
#: imported record must also meet, checked through MemoryCreate.
_WRITABLE = tuple(models.MemoryCreate.model_fields)

ExportPage = Callable[[MemoryRow | None, int], Awaitable[list[MemoryRow]]]


async def export_lines(next_page: ExportPage) -> AsyncIterator[str]:
    """Every row ``next_page`` yields, one ``Memory`` JSON document per line."""
    after: MemoryRow | None = None
    while True:
        rows = await next_page(after, EXPORT_BATCH)
        for row in rows:
            yield to_memory(row).model_dump_json() + "\n"
        if len(rows) < EXPORT_BATCH:
            return
        after = rows[-1]


def _describe(exc: ValidationError) -> tuple[str, str]:
    """The first failing rule (a JSON Schema keyword) and every failure on the line."""
    found = field_errors([dict(e) for e in exc.errors()])
    return found[0].rule, "; ".join(f"{e.field or '/'}: {e.message}" for e in found)


def _parse_line(number: int, line: str) -> Record:
    memory = models.Memory.model_validate_json(line)
    fields = memory.model_dump(exclude_none=True)
    models.MemoryCreate.model_validate({k: fields[k] for k in _WRITABLE if k in fields})
    return Record(number, fields)


def parse_records(body: str) -> list[Record]:
    """Every non-blank line as a record; 413 over the bounds, 422 naming each bad line."""
    lines = body.splitlines()
    if len(lines) > MAX_IMPORT_LINES:
        raise ApiError(ErrorCode.payload_too_large, f"an import is at most {MAX_IMPORT_LINES} lines")
    records: list[Record] = []
    errors: list[FieldError] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(_parse_line(number, line))
        except ValidationError as exc:
            errors.append(line_error(number, *_describe(exc)))
    if errors:
        raise invalid_lines(errors)
    return records
