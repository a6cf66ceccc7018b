"""Check a tool call's arguments against the capability's advertised ``inputSchema``.

Not a second validator of record (the REST route validates again): it exists so a
failure names the argument as the agent sent it (``/body/tags/3``), with the JSON
Schema keyword it broke and the type it got, before anything is dispatched.

Most calls pass, so passing must be cheap: ``ArgumentSchema`` compiles each schema once
into a Rust validator (``jsonschema_rs``, well under a microsecond for a typical call
against 60 for jsonschema's walk), and only a call it refuses is walked by jsonschema
to name every failure. ``pattern`` is matched with Python's ``re`` in both, as
jsonschema matches it (``$`` before a final newline, ``\\s`` taking ``\\x85``), so the
two never disagree on a string; any value the Rust side cannot take is left to jsonschema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import jsonschema_rs
from jsonschema import Draft202012Validator, ValidationError

from memory_bank.api.argument_hints import object_example, where_it_belongs
from memory_bank.errors import FieldError, json_pointer
from memory_bank.pattern_messages import pattern_message

__all__ = ["GROUPS", "ArgumentSchema", "decode_groups", "schema_failures"]

#: Argument groups as the catalog's inputSchema lays them out.
GROUPS = ("path", "query", "header", "body")

#: How a broken keyword reads in a message; ``{}`` is the schema's bound.
_PHRASES: dict[str, str] = {
    "type": "must be of type {}",
    "enum": "must be one of {}",
    "const": "must be {}",
    "pattern": "must match the pattern {}",
    "minLength": "must be at least {} characters",
    "maxLength": "must be at most {} characters",
    "minItems": "must have at least {} items",
    "maxItems": "must have at most {} items",
    "minProperties": "must have at least {} fields",
    "maxProperties": "must have at most {} fields",
    "minimum": "must be >= {}",
    "maximum": "must be <= {}",
    "exclusiveMinimum": "must be > {}",
    "exclusiveMaximum": "must be < {}",
    "multipleOf": "must be a multiple of {}",
    "uniqueItems": "must not repeat items",
}


#: A number is quoted back in a failure up to this many characters (a 400-digit integer is not).
MAX_SHOWN_NUMBER = 24


def _json_type(value: Any) -> str:
    """The JSON type of ``value`` with its size where a size bound could be the issue, and a
    scalar's value itself ("got integer 50" against "must be <= 20"), unless it is long."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {json.dumps(value)}"
    if isinstance(value, int | float):
        kind, shown = ("integer" if isinstance(value, int) else "number"), repr(value)
        return f"{kind} {shown}" if len(shown) <= MAX_SHOWN_NUMBER else f"{kind} of {_count(len(shown), 'digit')}"
    if isinstance(value, str):
        return f"string of {_count(len(value), 'character')}"
    if isinstance(value, list):
        return f"array of {_count(len(value), 'item')}"
    return f"object with {_count(len(value), 'field')}"


def _count(n: int, noun: str) -> str:
    """``1 item``, ``2 items``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _field_errors(error: ValidationError, root: Mapping[str, Any]) -> list[FieldError]:
    """One jsonschema error as pointers to the arguments at fault, with the fix where the schema shows it.

    ``required`` and ``additionalProperties`` fail on the parent object; they are
    reported at the missing or unexpected member, as REST reports them. An unknown
    member says where that name belongs; a bare value where an object goes says what
    the object holds (``argument_hints``).
    """
    where, rule, value = list(error.absolute_path), str(error.validator), error.instance
    if rule == "required" and isinstance(value, dict) and isinstance(error.validator_value, list):
        missing = [name for name in error.validator_value if name not in value]
        return [FieldError(json_pointer([*where, name]), rule, "is required but missing") for name in missing]
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    if rule == "additionalProperties" and isinstance(value, dict) and "patternProperties" not in schema:
        known = list(schema.get("properties") or {})
        return [
            FieldError(
                json_pointer([*where, name]),
                rule,
                f"is not a known argument (got {_json_type(value[name])}){where_it_belongs(root, name, value[name], where, known)}",
            )
            for name in value
            if name not in known
        ]
    worded = pattern_message(error.validator_value) if rule == "pattern" else None
    phrase = worded or _PHRASES.get(rule, "fails " + rule).format(json.dumps(error.validator_value))
    example = object_example(schema, root, value) if rule == "type" and error.validator_value == "object" else ""
    hint = f", e.g. {example}" if example else ""
    return [FieldError(json_pointer(where), rule, f"{phrase}{hint}; got {_json_type(value)}")]


def _pointer_order(failure: FieldError) -> list[tuple[int, int | str]]:
    """Sort key: pointer segments in order, array indexes numerically (``/tags/2`` before ``/tags/10``).

    An index is ASCII digits; an argument named ``²`` (a digit to ``isdigit``, not to ``int``) is a name."""
    return [(0, int(part)) if part.isascii() and part.isdigit() else (1, part) for part in failure.field.split("/")]


#: The most failures one call is told. An array of 100,000 bad items is one mistake (REST says
#: only that it is too long): listed item by item it was a 13 MB answer and 2 s of work.
MOST_FAILURES = 50


def schema_failures(validator: Draft202012Validator, instance: Any) -> list[FieldError]:
    """The ways ``instance`` breaks the schema, ordered by pointer, each reported once: the
    first ``MOST_FAILURES`` the walk meets (it meets an array's length before its items), and
    then, if there are more, one failure of rule ``more`` at the root saying so."""
    found: dict[tuple[str, str], FieldError] = {}
    root = validator.schema if isinstance(validator.schema, Mapping) else {}
    errors = validator.iter_errors(instance)
    for error in errors:
        for failure in _field_errors(error, root):
            found.setdefault((failure.field, failure.rule), failure)
        if len(found) >= MOST_FAILURES:
            break
    told = sorted(found.values(), key=_pointer_order)[:MOST_FAILURES]
    if len(found) > MOST_FAILURES or next(errors, None) is not None:
        told.append(FieldError("", "more", f"more failures are not listed: mend these {MOST_FAILURES} and call again"))
    return told


class _SearchedPattern:
    """The ``pattern`` keyword for ``jsonschema_rs``, matched as jsonschema matches it: ``re.search``."""

    def __init__(self, parent_schema: Mapping[str, Any], value: str, schema_path: list[str | int]) -> None:
        self._pattern = re.compile(value)

    def validate(self, instance: Any) -> None:
        if isinstance(instance, str) and self._pattern.search(instance) is None:
            raise ValueError(f"does not match {self._pattern.pattern!r}")


class ArgumentSchema:
    """An input schema compiled once: the Rust validator decides, jsonschema names what failed."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema = schema
        self._decides = jsonschema_rs.Draft202012Validator(
            dict(schema), validate_formats=False, keywords={"pattern": _SearchedPattern}
        )
        self._reports = Draft202012Validator(dict(schema))

    def failures(self, instance: Any) -> list[FieldError]:
        """``schema_failures`` of ``instance``; none without the walk when the compiled check passes."""
        try:
            if self._decides.is_valid(instance):
                return []
        except (TypeError, ValueError, OverflowError):  # a value it cannot convert: jsonschema decides
            pass
        return schema_failures(self._reports, instance)


def _header_names(headers: Mapping[str, Any], declared: Mapping[str, Any]) -> dict[str, Any]:
    """``headers`` with each name the schema declares in another case renamed to the schema's
    spelling, unless that spelling is sent as well (then the schema check names the extra one)."""
    spelled = {name.casefold(): name for name in declared}
    renamed: dict[str, Any] = {}
    for name, member in headers.items():
        proper = spelled.get(name.casefold(), name)
        renamed[name if proper in headers and proper != name else proper] = member
    return renamed


def decode_groups(arguments: Mapping[str, Any], input_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments as the schema reads them, from the forms clients send them in.

    Groups sent as JSON text (``"body": "{\\"content\\": ...}"``), as many clients do, are
    parsed, where the schema wants something other than a string and the text parses.
    What strict function-calling clients fill unused fields with is left out: ``null`` for any
    argument or member of a group (from an agent, null means not given), and
    ``{}`` for a group the operation has none of. A header is named in any case, as HTTP
    names it (``idempotency-key``). Anything else is left for the schema check to name.
    """
    properties = input_schema.get("properties") or {}
    decoded = {name: value for name, value in arguments.items() if value is not None}
    for group in GROUPS:
        value = decoded.get(group)
        if isinstance(value, str) and (properties.get(group) or {}).get("type") != "string":
            try:
                value = json.loads(value)
            except ValueError:
                continue
        if isinstance(value, dict):
            value = {name: member for name, member in value.items() if member is not None}
            if group == "header":
                value = _header_names(value, (properties.get(group) or {}).get("properties") or {})
            if not value and group not in properties:
                del decoded[group]
                continue
        if group in decoded:
            decoded[group] = value
    return decoded
