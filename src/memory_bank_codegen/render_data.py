"""Render the data the package carries: the served spec and the capability catalog, as JSON.

JSON is what both are (a spec and MCP tool descriptions), so they ship as package data
rather than as Python literals: a reader sees the catalog as a client receives it, and
each is parsed once, when its small reader module is first imported. Keys keep the
spec's own order, so the files are byte-stable across runs.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

from memory_bank.capabilities.catalog import SHARED
from memory_bank_codegen.pytypes import COMPONENT_PREFIX
from memory_bank_codegen.schemas import RefIndex, to_json_schema

__all__ = ["render_catalog", "render_json", "render_reader"]

#: The parts of a capability that hold JSON Schemas, where shared definitions are looked for.
SCHEMA_PARTS = ("inputSchema", "outputSchema")


def render_json(value: Any) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False) + "\n"


def _text(node: Any) -> str:
    """Order-sensitive identity of a subschema: sharing must not reorder what clients receive."""
    return json.dumps(node, ensure_ascii=False)


def _nodes(node: Any) -> Iterator[Any]:
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _shared(capabilities: list[dict[str, Any]], spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The component object schemas that appear, converted, in more than one place of the catalog."""
    seen = Counter(_text(node) for c in capabilities for part in SCHEMA_PARTS for node in _nodes(c[part]))
    refs = RefIndex(spec)
    shared = {}
    for name in spec.get("components", {}).get("schemas", {}):
        schema = to_json_schema({"$ref": f"{COMPONENT_PREFIX}{name}"}, spec, refs=refs)
        if schema.get("type") == "object" and "$defs" not in schema and seen[_text(schema)] > 1:
            shared[name] = schema
    return shared


def render_catalog(capabilities: list[dict[str, Any]], spec: dict[str, Any] | None = None) -> str:
    """``{"shared": {name: schema}, "capabilities": [...]}``; ``capabilities.catalog`` reads it back.

    Without ``spec`` nothing is shared (catalogs merged from many specs).
    """
    shared = _shared(capabilities, spec) if spec else {}
    names = {_text(schema): name for name, schema in shared.items()}

    def fold(node: Any, inside: str | None = None) -> Any:
        if isinstance(node, dict):
            name = names.get(_text(node))
            if name is not None and name != inside:
                return {SHARED: name}
            return {key: fold(value, inside) for key, value in node.items()}
        if isinstance(node, list):
            return [fold(item, inside) for item in node]
        return node

    folded = {name: fold(schema, name) for name, schema in shared.items()}
    return render_json({"shared": folded, "capabilities": [fold(c) for c in capabilities]})


def render_reader(name: str, annotation: str, data: str, doc: str, *, reader: tuple[str, str] | None = None) -> str:
    """A module that reads ``data`` (a JSON file beside it) once, into ``name``, through ``reader``.

    ``reader`` is ``(module, function)`` of what turns the parsed JSON into the value.
    """
    value = f'json.loads(files(__package__).joinpath("{data}").read_text(encoding="utf-8"))'
    imports = "import json\nfrom importlib.resources import files\nfrom typing import Any\n"
    if reader is not None:
        imports += f"\nfrom {reader[0]} import {reader[1]}\n"
        value = f"{reader[1]}({value})"
    return f'"""{doc}"""\n\n{imports}\n{name}: {annotation} = {value}\n'
