"""The most bytes a JSON body valid under its schema can take, so each route can refuse more unread.

A route must know its cap before reading a byte: a client that declares a gigabyte is
answered at once, and a chunked body is cut off as soon as it passes the cap. The cap
follows from the schema's own bounds (``maxLength``, ``maxItems``, enums, closed
objects), computed for the most expensive spelling a client may send: every character
escaped (``\\ud83d\\ude00`` spends 12 bytes on one character, as ``json.dumps`` writes
an emoji) and every token indented on its own line. A schema that bounds nothing (a
string without ``maxLength``, an open object, a recursive type) gets ``UNBOUNDED_BYTES``
instead, so no route ever reads without a limit.
"""

from __future__ import annotations

import json
from typing import Any

from memory_bank_codegen.errors import CodegenError
from memory_bank_codegen.pytypes import TypeNamer

__all__ = ["UNBOUNDED_BYTES", "max_json_bytes"]

#: The cap of a body whose schema sets no bound of its own.
UNBOUNDED_BYTES = 1 << 20

#: Bytes of one character at its most expensive: an escaped surrogate pair.
CHARACTER_BYTES = 12

#: A number as clients print them: a double's shortest repr is at most 24 characters.
NUMBER_BYTES = 32

#: Whitespace before a token: a newline and indentation to a depth of 15 at four spaces.
WHITESPACE_BYTES = 64

#: ``date-time`` and ``date`` strings: the longest RFC 3339 spelling, fraction and zone included.
FORMAT_CHARACTERS = {"date-time": 40, "date": 10}

_SCALAR_BYTES = {"boolean": len("false"), "null": len("null"), "integer": NUMBER_BYTES, "number": NUMBER_BYTES}


class _Unbounded(Exception):
    """Raised inside the walk when some part of the schema sets no bound."""


def max_json_bytes(schema: dict[str, Any], namer: TypeNamer) -> int:
    """The largest body ``schema`` admits, in bytes, or ``UNBOUNDED_BYTES`` when it bounds nothing."""
    try:
        return _value(schema, namer, frozenset()) + WHITESPACE_BYTES
    except _Unbounded:
        return UNBOUNDED_BYTES


def _value(schema: dict[str, Any], namer: TypeNamer, seen: frozenset[str]) -> int:
    """One value's bytes, with the whitespace that may precede it."""
    return WHITESPACE_BYTES + _bare(schema, namer, seen)


def _bare(schema: dict[str, Any], namer: TypeNamer, seen: frozenset[str]) -> int:
    if "$ref" in schema:
        ref = schema["$ref"]
        if ref in seen:
            raise _Unbounded  # a recursive type nests without limit
        try:
            target = namer.component(ref)[1]
        except CodegenError:
            raise _Unbounded from None
        return _bare(target, namer, seen | {ref})
    if "enum" in schema:
        return max(len(json.dumps(value)) for value in schema["enum"])
    members = schema.get("anyOf") or schema.get("oneOf") or schema.get("allOf")
    if members:
        return max(_bare(member, namer, seen) for member in members)
    types = schema.get("type")
    if isinstance(types, list):
        return max(_bare({**schema, "type": kind}, namer, seen) for kind in types)
    if types == "string":
        characters = schema.get("maxLength", FORMAT_CHARACTERS.get(schema.get("format", "")))
        if characters is None:
            raise _Unbounded
        return 2 + CHARACTER_BYTES * int(characters)
    if types == "array":
        if "maxItems" not in schema:
            raise _Unbounded
        item = _value(schema.get("items", {}), namer, seen) + len(",")
        return 2 + WHITESPACE_BYTES + int(schema["maxItems"]) * item
    if types == "object" or "properties" in schema:
        return _object(schema, namer, seen)
    if types in _SCALAR_BYTES:
        return _SCALAR_BYTES[types]
    raise _Unbounded  # no type: anything at all


def _object(schema: dict[str, Any], namer: TypeNamer, seen: frozenset[str]) -> int:
    """A closed object: its braces and, at most once each, every property with its key."""
    if schema.get("additionalProperties") is not False:
        raise _Unbounded
    members = sum(
        WHITESPACE_BYTES + 2 + CHARACTER_BYTES * len(name) + len(":,") + _value(sub, namer, seen)
        for name, sub in schema.get("properties", {}).items()
    )
    return 2 + WHITESPACE_BYTES + members
