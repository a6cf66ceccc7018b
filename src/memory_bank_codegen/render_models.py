"""Render ``models.py``: one pydantic model or type alias per ``components/schemas`` entry.

Object schemas become ``BaseModel`` classes (``extra="forbid"`` where the spec says
``additionalProperties: false``); enums become ``Literal`` aliases so handlers can use
plain strings; bounded scalars and arrays become ``Annotated`` aliases carrying their
constraints, so a bound is written once in the spec and enforced everywhere it is used.
"""

from __future__ import annotations

import keyword
import textwrap
from typing import Any

from memory_bank_codegen.errors import CodegenError
from memory_bank_codegen.formatting import LINE_LENGTH
from memory_bank_codegen.imports import ImportGroups, import_block
from memory_bank_codegen.naming import pascal_case, snake_case
from memory_bank_codegen.pytypes import SCALARS, InlineModel, TypeNamer, component_refs, constraints, keyword_args

IMPORTS: ImportGroups = (
    {"datetime": ("date", "datetime"), "typing": ("Annotated", "Any", "Literal")},
    {
        "pydantic": (
            "AfterValidator",
            "BaseModel",
            "BeforeValidator",
            "ConfigDict",
            "Field",
            "field_validator",
            "model_validator",
        ),
        "pydantic_core": ("PydanticCustomError",),
    },
)

#: Bodies are validated strictly (``api.bodies.read_json_body``), but JSON Schema counts
#: ``3.0`` as an integer, and MCP clients validate against JSON Schema: so a model's
#: integer takes a number with no fraction, and still no string or boolean.
INTEGER_HELPERS = '''def _whole_number(value: Any) -> Any:
    """A float with no fraction is the integer JSON Schema says it is."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


JsonInt = Annotated[int, BeforeValidator(_whole_number)]'''


#: Optional fields get ``| None`` so that "not sent" is representable. A field the spec
#: does not make nullable must still never be ``null`` on the wire: it is left out of
#: responses when None, and a request that sends it as null is refused (a before-validator
#: only runs on values actually sent, so leaving the field out stays allowed).
NULL_HELPERS = '''def _omit_none(value: object) -> bool:
    """An optional field the spec does not make nullable is left out, never sent as null."""
    return value is None


def _refuse_null(cls: type, value: Any) -> Any:
    """An optional field the spec does not make nullable may be left out, but not sent as null."""
    if value is None:
        raise PydanticCustomError("null_type", "null is not allowed here; leave the field out instead")
    return value'''


#: pydantic has no ``uniqueItems``, and a ``set`` would drop repeats silently: a client
#: that sends ``["memory:read", "memory:read"]`` is told, as a JSON Schema validator
#: would tell it. Equal means the same JSON value, so ``1`` and ``true`` differ.
UNIQUE_HELPERS = '''def _unique_items(items: list[Any]) -> list[Any]:
    """JSON Schema's ``uniqueItems``: a repeated item is refused, never dropped."""
    for index, item in enumerate(items):
        first = next(n for n, seen in enumerate(items) if type(seen) is type(item) and seen == item)
        if first != index:
            raise PydanticCustomError(
                "unique_items", "item {index} repeats item {first}", {"index": index, "first": first}
            )
    return items'''


def render_models(spec: dict[str, Any]) -> str:
    schemas: dict[str, Any] = spec.get("components", {}).get("schemas", {})
    namer = TypeNamer(spec, scalars={**SCALARS, "integer": "JsonInt"}, unique_items="_unique_items")
    blocks: list[str] = [NULL_HELPERS, INTEGER_HELPERS]
    classes: list[str] = []
    for key in _dependency_order(schemas):
        schema = schemas[key]
        name = pascal_case(key)
        if _is_model(schema):
            blocks.append(_render_class(name, schema, namer))
            classes.append(name)
        else:
            blocks.append(_render_alias(name, schema, namer))
        while namer.inline_models:
            inline: InlineModel = namer.inline_models.pop(0)
            blocks.append(_render_class(inline.name, inline.schema, namer))
            classes.append(inline.name)
    if any("AfterValidator(_unique_items)" in block for block in blocks):
        blocks.insert(2, UNIQUE_HELPERS)
    rebuild = f"for _model in ({', '.join(classes)},):\n    _model.model_rebuild()\n" if classes else ""
    body = "\n\n\n".join(blocks) + "\n\n\n" + rebuild
    return import_block(body, IMPORTS) + "\n\n" + body


def _is_model(schema: dict[str, Any]) -> bool:
    return "enum" not in schema and (schema.get("type") == "object" or "properties" in schema)


def _dependency_order(schemas: dict[str, Any]) -> list[str]:
    """Spec order, except that a definition comes after the ones it refers to.

    Aliases are evaluated when the module is imported, so what they name must already
    exist; cycles (only possible through models) are left to ``model_rebuild``.
    """
    ordered: list[str] = []
    state: dict[str, str] = {}

    def visit(key: str) -> None:
        if state.get(key) or key not in schemas:
            return
        state[key] = "visiting"
        for dep in component_refs(schemas[key]):
            visit(dep)
        state[key] = "done"
        ordered.append(key)

    for key in schemas:
        visit(key)
    return ordered


def _render_alias(name: str, schema: dict[str, Any], namer: TypeNamer) -> str:
    expression = namer.expression(schema, name)
    field_args = _field_args(schema)
    if field_args:
        expression = f"Annotated[{expression}, Field({keyword_args(field_args)})]"
    return f"{name} = {expression}"


def _render_class(name: str, schema: dict[str, Any], namer: TypeNamer) -> str:
    extra = "forbid" if schema.get("additionalProperties") is False else "allow"
    lines = [f"class {name}(BaseModel):"]
    if schema.get("description"):
        lines.append(f"    {_docstring(schema['description'])}")
        lines.append("")
    names = [field_name(prop) for prop in schema.get("properties", {})]
    clashes = sorted({n for n in names if names.count(n) > 1})
    if clashes:
        raise CodegenError.at("spec", "property-names", f"{name}: properties spelled differently share the field {clashes[0]}")
    # An aliased field is read and written under its wire name; handlers build it by attribute.
    by_name = ", validate_by_name=True, serialize_by_alias=True" if names != list(schema.get("properties", {})) else ""
    lines.append(f'    model_config = ConfigDict(extra="{extra}"{by_name})')
    lines.append("")
    required = set(schema.get("required", []))
    not_null: list[str] = []
    for prop, prop_schema in schema.get("properties", {}).items():
        line, omits_none = _render_field(name, prop, prop_schema, prop in required, namer)
        lines.append("    " + line)
        if omits_none:
            not_null.append(field_name(prop))
    if not_null:
        lines.extend(["", f'    _no_null = field_validator({", ".join(map(repr, not_null))}, mode="before")(_refuse_null)'])
    if "minProperties" in schema:
        lines.extend(_min_properties_validator(schema["minProperties"]))
    return "\n".join(lines)


def _render_field(owner: str, prop: str, schema: dict[str, Any], required: bool, namer: TypeNamer) -> tuple[str, bool]:
    """The field's line, and whether it is optional without being nullable (None means "not sent")."""
    expression = namer.expression(schema, owner + pascal_case(prop))
    field_args: dict[str, Any] = {}
    omit_none = not required and "None" not in expression.split(" | ")
    if not required:
        field_args["default"] = schema.get("default")
    if omit_none:
        expression += " | None"
    field_args.update(_field_args(schema))
    name = field_name(prop)
    if name != prop:
        field_args["alias"] = prop
    arguments = keyword_args(field_args) + (", exclude_if=_omit_none" if omit_none else "")
    return (f"{name}: {expression} = Field({arguments})" if field_args else f"{name}: {expression}"), omit_none


def field_name(prop: str) -> str:
    """The attribute a property is read by: its own name when Python allows it, else its snake_case.

    ``skipped-count`` becomes ``skipped_count`` with the wire name as its alias.
    """
    return prop if prop.isidentifier() and not keyword.iskeyword(prop) and not prop.startswith("_") else snake_case(prop)


def _field_args(schema: dict[str, Any]) -> dict[str, Any]:
    args = constraints(schema)
    if schema.get("description"):
        args["description"] = " ".join(schema["description"].split())
    return args


def _min_properties_validator(minimum: int) -> list[str]:
    """``minProperties`` as a check that names what may be sent (``PATCH {}`` was told "send at least 1 field(s)")."""
    wanted = "one field" if minimum == 1 else f"{minimum} fields"
    return [
        "",
        '    @model_validator(mode="before")',
        "    @classmethod",
        "    def _min_properties(cls, data: Any) -> Any:",
        f"        if isinstance(data, dict) and len(data) < {minimum}:",
        f'            raise ValueError("send at least {wanted} of: " + ", ".join(f.alias or n for n, f in cls.model_fields.items()))',
        "        return data",
    ]


def _docstring(text: str) -> str:
    """A class docstring (to follow four spaces of indent): on one line when it fits in
    ``LINE_LENGTH``, else filled to it with the closing quotes on a line of their own."""
    flat = " ".join(text.split()).replace('"""', "'''")
    if len(f'    """{flat}"""') <= LINE_LENGTH:
        return f'"""{flat}"""'
    filled = textwrap.fill(flat, width=LINE_LENGTH, initial_indent='    """', subsequent_indent="    ")
    return filled.removeprefix("    ") + '\n    """'
