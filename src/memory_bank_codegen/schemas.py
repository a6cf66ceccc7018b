"""OpenAPI schema objects -> self-contained JSON Schema (draft 2020-12).

MCP tool schemas must stand alone: a client validating arguments has no spec to
resolve ``#/components/...`` against. So local refs are inlined, except refs that
take part in a cycle (a tree, a linked list): inlining those would never end, so each
cyclic component is emitted once under the root's ``$defs`` and pointed at with
``#/$defs/<Name>``. OpenAPI 3.0 dialect (``nullable``, boolean ``exclusiveMinimum``,
``example``) is rewritten into 2020-12 so that a strict validator accepts the result.
Real-world specs are messy; anything unresolvable becomes ``{}`` (accept anything)
rather than an exception, because one bad ref must not cost a whole catalog.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

from memory_bank_codegen.refs import resolve_ref

__all__ = ["RefIndex", "to_json_schema"]

#: Keywords whose value is one subschema.
_SCHEMA_KEYS = frozenset(
    {"additionalProperties", "not", "contains", "propertyNames", "if", "then", "else",
     "unevaluatedItems", "unevaluatedProperties", "contentSchema", "items", "additionalItems"}
)
#: Keywords whose value maps names to subschemas.
_SCHEMA_MAP_KEYS = frozenset({"properties", "patternProperties", "dependentSchemas", "$defs", "definitions"})
#: Keywords whose value is a list of subschemas.
_SCHEMA_LIST_KEYS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
#: OpenAPI-only keywords that mean nothing (or something else) to a JSON Schema validator.
_OPENAPI_ONLY = frozenset({"example", "xml", "discriminator", "externalDocs", "nullable"})
#: Keywords describing a schema rather than constraining it; they stay outside a null-union.
_ANNOTATIONS = ("title", "description", "default", "deprecated", "readOnly", "writeOnly")
_JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object", "null"})
_DEF_NAME_JUNK = re.compile(r"[^A-Za-z0-9_.-]+")


def _children(schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every direct subschema of ``schema`` (by keyword, so a property named ``example`` counts)."""
    for key, value in schema.items():
        if key in _SCHEMA_KEYS and isinstance(value, dict):
            yield value
        elif key in _SCHEMA_MAP_KEYS and isinstance(value, dict):
            yield from (v for v in value.values() if isinstance(v, dict))
        elif (key in _SCHEMA_LIST_KEYS or key == "items") and isinstance(value, list):
            yield from (v for v in value if isinstance(v, dict))


class RefIndex:
    """Ref resolution and cycle detection for one spec, cached across many conversions.

    Building a catalog converts thousands of schemas from the same spec; the cycle
    analysis (Tarjan's strongly connected components over the ref graph) is done once
    per ref, lazily, so a spec pays only for the components it actually uses.
    """

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self._targets: dict[str, dict[str, Any] | None] = {}
        self._cyclic: dict[str, bool] = {}

    def target(self, ref: str) -> dict[str, Any] | None:
        """The schema ``ref`` points at, or None when it is missing, remote or not a schema."""
        if ref not in self._targets:
            found = resolve_ref(self.spec, ref)
            self._targets[ref] = found if isinstance(found, dict) else None
        return self._targets[ref]

    def is_cyclic(self, ref: str) -> bool:
        """True when ``ref`` can reach itself through other refs (so it cannot be inlined)."""
        if ref not in self._cyclic:
            self._analyse(ref)
        return self._cyclic[ref]

    def _edges(self, ref: str) -> list[str]:
        found: list[str] = []
        stack = [self.target(ref) or {}]
        while stack:
            schema = stack.pop()
            if isinstance(schema.get("$ref"), str):
                found.append(schema["$ref"])
            stack.extend(_children(schema))
        return found

    def _analyse(self, root: str) -> None:
        """Iterative Tarjan from ``root``; marks every newly visited ref cyclic or not."""
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        on_stack: set[str] = set()
        scc_stack: list[str] = []
        work: list[tuple[str, Iterator[str]]] = []

        def visit(ref: str) -> None:
            index[ref] = low[ref] = len(index)
            scc_stack.append(ref)
            on_stack.add(ref)
            work.append((ref, iter(self._edges(ref))))

        visit(root)
        while work:
            ref, edges = work[-1]
            nxt = next((e for e in edges if e not in self._cyclic), None)
            if nxt is not None:
                if nxt not in index:
                    visit(nxt)
                elif nxt in on_stack:
                    low[ref] = min(low[ref], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[ref])
            if low[ref] == index[ref]:
                members = []
                while True:
                    member = scc_stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == ref:
                        break
                looped = len(members) > 1 or ref in self._edges(ref)
                self._cyclic.update(dict.fromkeys(members, looped))


class _Converter:
    """One output document: inlines refs, and collects the ``$defs`` of cyclic ones."""

    def __init__(self, refs: RefIndex) -> None:
        self.refs = refs
        self.defs: dict[str, dict[str, Any]] = {}
        self._def_names: dict[str, str] = {}

    def convert(self, schema: Any) -> Any:
        if isinstance(schema, bool):
            return schema
        if not isinstance(schema, dict):
            return {}
        if isinstance(schema.get("$ref"), str):
            return self._ref(schema)
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in _OPENAPI_ONLY or key.startswith("x-"):
                continue
            if key in _SCHEMA_MAP_KEYS:
                if isinstance(value, dict):
                    out[key] = {name: self.convert(sub) for name, sub in value.items()}
            elif key in _SCHEMA_LIST_KEYS or (key == "items" and isinstance(value, list)):
                if isinstance(value, list):
                    out["prefixItems" if key == "items" else key] = [self.convert(s) for s in value]
            elif key in _SCHEMA_KEYS:
                out[key] = self.convert(value)
            else:
                out[key] = copy.deepcopy(value) if isinstance(value, (dict, list)) else value
        _fix_dialect(out)
        return _nullable(out) if schema.get("nullable") is True else out

    def _ref(self, schema: dict[str, Any]) -> dict[str, Any]:
        """Inline a ref (siblings such as ``description`` win), or point into ``$defs``."""
        ref = schema["$ref"]
        siblings = self.convert({k: v for k, v in schema.items() if k not in ("$ref", "nullable")})
        target = self.refs.target(ref)
        if target is None:
            out = siblings
        elif self.refs.is_cyclic(ref):
            out = {"$ref": f"#/$defs/{self._define(ref, target)}", **siblings}
        else:
            out = {**self.convert(target), **siblings}
        return _nullable(out) if schema.get("nullable") is True else out

    def _define(self, ref: str, target: dict[str, Any]) -> str:
        if ref in self._def_names:
            return self._def_names[ref]
        base = _DEF_NAME_JUNK.sub("_", ref.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")) or "Schema"
        name, n = base, 1
        while name in self.defs:
            n += 1
            name = f"{base}_{n}"
        self._def_names[ref] = name
        self.defs[name] = {}  # reserve the name first: the body refers back to it
        self.defs[name] = self.convert(target)
        return name


def _fix_dialect(out: dict[str, Any]) -> None:
    """Rewrite 3.0 keyword forms, and drop values a 2020-12 meta-schema would reject."""
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(out.get(bound), bool) and out.pop(bound) and isinstance(out.get(limit), (int, float)):
            out[bound] = out.pop(limit)
    types = out.get("type")
    if isinstance(types, str) and types not in _JSON_TYPES:
        del out["type"]  # e.g. swagger 2 "file"
    elif isinstance(types, list):
        kept = [t for t in dict.fromkeys(types) if t in _JSON_TYPES]
        if kept:
            out["type"] = kept
        else:
            del out["type"]
    for key, kind in (("required", list), ("enum", list), ("examples", list), ("pattern", str), ("format", str)):
        if key in out and not isinstance(out[key], kind):
            del out[key]
    if "required" in out:
        out["required"] = list(dict.fromkeys(r for r in out["required"] if isinstance(r, str)))


def _nullable(out: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI 3.0 ``nullable: true`` as JSON Schema: null joins the type (or a union)."""
    types = out.get("type")
    if "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    if isinstance(types, str):
        out["type"] = [types, "null"]
    elif isinstance(types, list):
        if "null" not in types:
            out["type"] = [*types, "null"]
    elif any(k not in _ANNOTATIONS for k in out):
        outer = {k: out.pop(k) for k in _ANNOTATIONS if k in out}
        return {**outer, "anyOf": [out, {"type": "null"}]}
    return out


def to_json_schema(schema: dict[str, Any], spec: dict[str, Any], *, refs: RefIndex | None = None) -> dict[str, Any]:
    """Convert ``schema`` (from ``spec``) to a standalone 2020-12 JSON Schema.

    Pass a shared ``refs`` index when converting many schemas of one spec; it only
    caches, the result is the same.
    """
    converter = _Converter(refs or RefIndex(spec))
    result = converter.convert(schema)
    if not isinstance(result, dict):
        result = {} if result is True else {"not": {}}
    if converter.defs:
        result = {**result, "$defs": {**result.get("$defs", {}), **converter.defs}}
    return result
