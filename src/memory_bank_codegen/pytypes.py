"""OpenAPI schema -> Python type expressions, for the modules that are written as code.

The catalog needs JSON Schema (``schemas.py``); the models, interface and routes need
Python source text. Both read the same spec, so this module spells every type one
way: a named component becomes its class or alias name, everything else an inline
expression. Constructs the handwritten specs do not use fail loudly here rather than
generating something subtly wrong.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from memory_bank_codegen.errors import CodegenError
from memory_bank_codegen.naming import pascal_case
from memory_bank_codegen.refs import chase, resolve_ref

COMPONENT_PREFIX = "#/components/schemas/"

#: JSON Schema keyword -> pydantic ``Field``/``Query`` keyword.
CONSTRAINTS: dict[str, str] = {
    "minLength": "min_length",
    "maxLength": "max_length",
    "pattern": "pattern",
    "minimum": "ge",
    "maximum": "le",
    "exclusiveMinimum": "gt",
    "exclusiveMaximum": "lt",
    "minItems": "min_length",
    "maxItems": "max_length",
}

SCALARS: dict[str, str] = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
FORMATS: dict[str, str] = {"date-time": "datetime", "date": "date"}


@dataclass
class InlineModel:
    """An object schema without a component name, emitted as ``<Parent><Property>``."""

    name: str
    schema: dict[str, Any]


@dataclass
class TypeNamer:
    """Turns schemas into type expressions; ``prefix`` qualifies component names (``models.``)."""

    spec: dict[str, Any]
    prefix: str = ""
    inline_models: list[InlineModel] = field(default_factory=list)
    #: Python spelling per JSON type; models override ``integer`` (see ``render_models``).
    scalars: dict[str, str] = field(default_factory=lambda: dict(SCALARS))
    #: The validator that enforces ``uniqueItems`` in the module being written; None where
    #: the module has none, so such an array fails to generate instead of going unchecked.
    unique_items: str | None = None

    def component(self, ref: str) -> tuple[str, dict[str, Any]]:
        """The Python name and schema a local component ``$ref`` points at."""
        if not ref.startswith(COMPONENT_PREFIX):
            raise CodegenError.at("spec", "ref-component", f"only refs to {COMPONENT_PREFIX}... name a type, got {ref}")
        target = resolve_ref(self.spec, ref)
        if not isinstance(target, dict):
            raise CodegenError.at("spec", "ref-missing", f"{ref} names no schema in this document")
        return pascal_case(ref.removeprefix(COMPONENT_PREFIX)), target

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        """Follow top-level refs until a concrete schema (for constraints and defaults)."""
        target, problem = chase(self.spec, schema)
        if problem is not None:
            raise CodegenError.at("spec", *problem)
        return target if isinstance(target, dict) else {}

    def expression(self, schema: dict[str, Any], owner: str = "Model") -> str:
        """A Python type for ``schema``; ``owner`` names inline object models it creates."""
        if "$ref" in schema:
            return self.prefix + self.component(schema["$ref"])[0]
        if "enum" in schema:
            return "Literal[" + ", ".join(repr(v) for v in schema["enum"]) + "]"
        for union_key in ("anyOf", "oneOf"):
            if union_key in schema:
                return _union(self.expression(s, owner) for s in schema[union_key])
        if "allOf" in schema:
            if len(schema["allOf"]) != 1:
                raise CodegenError.at("spec", "all-of-single", f"{owner}: allOf with several members is not supported")
            return self.expression(schema["allOf"][0], owner)
        types = schema.get("type")
        if isinstance(types, list):
            return _union(self.expression({**schema, "type": t}, owner) for t in types)
        if types == "array":
            items = f"list[{self.expression(schema.get('items', {}), owner + 'Item')}]"
            return self._unique(items, owner) if schema.get("uniqueItems") is True else items
        if types == "object" or (types is None and "properties" in schema):  # not the "null" of [object, "null"]
            return self._object(schema, owner)
        if types in SCALARS:
            return FORMATS.get(schema.get("format", ""), self.scalars[types]) if types == "string" else self.scalars[types]
        if types is None:
            return "Any"
        raise CodegenError.at("spec", "schema-type", f"{owner}: unsupported schema type {types!r}")

    def _unique(self, expression: str, owner: str) -> str:
        """``expression`` carrying the validator that refuses repeated items (pydantic has no ``uniqueItems``)."""
        if self.unique_items is None:
            raise CodegenError.at("spec", "unique-items", f"{owner}: uniqueItems is only enforced in a schema component")
        return f"Annotated[{expression}, AfterValidator({self.unique_items})]"

    def _object(self, schema: dict[str, Any], owner: str) -> str:
        if schema.get("properties"):
            self.inline_models.append(InlineModel(owner, schema))
            return self.prefix + owner
        extra = schema.get("additionalProperties")
        value = self.expression(extra, owner + "Value") if isinstance(extra, dict) else "Any"
        return f"dict[str, {value}]"


def constraints(schema: dict[str, Any]) -> dict[str, Any]:
    """The pydantic keywords for the bounds ``schema`` itself declares (refs not followed)."""
    return {CONSTRAINTS[k]: v for k, v in schema.items() if k in CONSTRAINTS}


#: The longest piece of a long string literal, so that the formatted line stays within 100.
_PIECE = 60


def _repr(value: Any) -> str:
    """``repr(value)`` with the marks it leaves as they are escaped: alone (a variation
    selector in a pattern) they show as nothing, or on the quote before them."""
    return "".join(
        (f"\\U{ord(c):08x}" if ord(c) > 0xFFFF else f"\\u{ord(c):04x}") if unicodedata.category(c).startswith("M") else c
        for c in repr(value)
    )


def literal(value: Any) -> str:
    """``repr(value)``, except that a long string becomes pieces the formatter lays out one a line."""
    if not isinstance(value, str) or len(value) <= _PIECE:
        return _repr(value)
    pieces, piece = [], ""
    for word in value.split(" "):
        if piece and len(piece) + len(word) >= _PIECE:
            pieces.append(piece)
            piece = ""
        piece += word + " "
    pieces.append(piece[:-1])
    return "(" + " ".join(_repr(chunk) for piece in pieces for chunk in _cut(piece)) + ")"


def _cut(piece: str) -> list[str]:
    """A piece that is one long word (a pattern, a URL) in chunks whose literals fit ``_PIECE``."""
    if " " in piece.strip() or len(_repr(piece)) <= _PIECE:
        return [piece]
    chunks, chunk = [], ""
    for character in piece:
        if chunk and len(_repr(chunk + character)) > _PIECE:
            chunks.append(chunk)
            chunk = ""
        chunk += character
    return [*chunks, chunk]


def keyword_args(values: dict[str, Any]) -> str:
    """``{"ge": 1, "le": 100}`` -> ``ge=1, le=100`` (deterministic, repr-quoted)."""
    return ", ".join(f"{k}={literal(v)}" for k, v in values.items())


def component_refs(schema: Any) -> Iterator[str]:
    """Every component ``$ref`` anywhere inside ``schema`` (for ordering definitions)."""
    if isinstance(schema, dict):
        if isinstance(schema.get("$ref"), str) and schema["$ref"].startswith(COMPONENT_PREFIX):
            yield schema["$ref"].removeprefix(COMPONENT_PREFIX)
        for value in schema.values():
            yield from component_refs(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from component_refs(item)


def _union(members: Iterator[str]) -> str:
    unique = list(dict.fromkeys(members))
    # ``X | None`` reads better with None last.
    unique.sort(key=lambda m: m == "None")
    return " | ".join(unique)
