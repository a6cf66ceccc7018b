"""Hints that turn a schema failure into the fix: where an argument belongs, what a group holds.

Agents often send an argument at the wrong level (``content`` next to ``name`` instead
of inside ``body``) or a bare value where a group object is expected (``"query": "helix"``).
The failure alone says what is wrong; these hints, read off the same input schema the
call is checked against, say what would be right, for any operation.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from memory_bank.did_you_mean import closest
from memory_bank.errors import json_pointer

Schema = Mapping[str, Any]

#: How deep the search for an argument's place goes; input schemas nest a few levels.
MAX_DEPTH = 6
#: Places named in one hint at most.
MAX_PLACES = 3
#: A value quoted back in an example is cut to this many characters.
MAX_QUOTED = 40

_COMBINATORS = ("allOf", "anyOf", "oneOf")


def _resolve(schema: Any, root: Schema) -> Schema:
    """``schema`` with a local ``#/...`` reference followed (one step); anything else as is."""
    if not isinstance(schema, Mapping):
        return {}
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(target, Mapping) else None
        return target if isinstance(target, Mapping) else {}
    return schema


def _places(schema: Any, root: Schema, at: list[str | int], seen: frozenset[int]) -> Iterator[tuple[str, list[str | int]]]:
    """Every ``(property name, location)`` the schema defines; an object's own names before nested ones.

    Array items are located at index 0, as an agent would write the first one.
    ``seen`` guards against cyclic references.
    """
    node = _resolve(schema, root)
    if id(node) in seen or len(at) > MAX_DEPTH:
        return
    seen = seen | {id(node)}
    properties = node.get("properties")
    if isinstance(properties, Mapping):
        for name, member in properties.items():
            yield name, [*at, name]
        for name, member in properties.items():
            yield from _places(member, root, [*at, name], seen)
    if "items" in node:
        yield from _places(node["items"], root, [*at, 0], seen)
    for keyword in _COMBINATORS:
        for branch in node.get(keyword) or ():
            yield from _places(branch, root, at, seen)


def where_it_belongs(root: Schema, name: str, value: Any, sent_at: list[str | int], known_here: list[str]) -> str:
    """``"; did you mean /body/content?"`` for an unknown argument, or ``""`` when nothing fits.

    The same name defined elsewhere in the schema comes first (the wrong-level case); then
    a wrapper object around arguments that belong here (``{"arguments": {"body": ...}}``);
    then a group the operation does not have around arguments it has elsewhere (``{"body":
    {"q": ...}}`` for a search, whose ``q`` is a query parameter); else a close spelling
    among the arguments known at this level (``tag`` -> ``tags``).
    """
    wrong = json_pointer([*sent_at, name])
    places = [place for place in _defined_at(root, name) if place != wrong][:MAX_PLACES]
    if places:
        return f"; did you mean {' or '.join(places)}?"
    if isinstance(value, Mapping) and value and set(value) <= set(known_here):
        unwrapped = ", ".join(json_pointer([*sent_at, member]) for member in value)
        return f"; did you mean {unwrapped}, without the wrapper?"
    if isinstance(value, Mapping) and 0 < len(value) <= MAX_PLACES:
        moved = [_defined_at(root, str(member))[:1] for member in value]
        if all(moved):
            return f"; did you mean {', '.join(place for [place] in moved)}?"
    close = closest(name, known_here)
    return f"; did you mean {json_pointer([*sent_at, close])}?" if close else ""


def known_at(root: Schema, at: Sequence[str | int]) -> list[str]:
    """The argument names the schema defines directly at ``at`` (``["body"]``; an array index as any
    index): the names an unknown one at ``at`` may misspell, for ``where_it_belongs``."""
    spot = [0 if isinstance(part, int) else part for part in at]
    return list(dict.fromkeys(name for name, place in _places(root, root, [], frozenset()) if place[:-1] == spot))


def _defined_at(root: Schema, name: str) -> list[str]:
    """Every place (a JSON pointer) where the schema defines an argument called ``name``."""
    return list(dict.fromkeys(json_pointer(at) for found, at in _places(root, root, [], frozenset()) if found == name))


def _json_type_of(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {str: "string", float: "number"}.get(type(value), "")


def _accepts(schema: Schema, value: Any) -> bool:
    """Whether a scalar ``value`` has a type ``schema`` names (an integer is a number too)."""
    kind = _json_type_of(value)
    declared = schema.get("type")
    types = declared if isinstance(declared, list) else [declared]
    return bool(kind) and (kind in types or (kind == "integer" and "number" in types))


def object_example(schema: Schema, root: Schema, sent: Any) -> str:
    """``{"q": "helix"}``: what an object-typed argument looks like, for a value sent bare.

    Names the object's required members, else its first one; a scalar that the single
    named member would accept is quoted back in it, so the example is the fix itself.
    Empty when the schema names no members.
    """
    properties = _resolve(schema, root).get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return ""
    required = [name for name in _resolve(schema, root).get("required") or () if name in properties]
    members = required or [next(iter(properties))]
    if len(members) == 1 and _accepts(_resolve(properties[members[0]], root), sent):
        quoted = json.dumps(sent[:MAX_QUOTED] if isinstance(sent, str) else sent, ensure_ascii=False)
        return "{" + f"{json.dumps(members[0])}: {quoted}" + "}"
    return "{" + ", ".join(f"{json.dumps(name)}: ..." for name in members) + "}"
