"""Render a spec's ``<module>_interface.py``: the typed Protocol that handwritten handlers implement.

One async method per operationId, keyword-only arguments named as the spec names
them, and a ``Reply`` of the success schema. A handler class that drifts from the
spec fails type checking here instead of failing a request in production.
"""

from __future__ import annotations

from typing import Any

from memory_bank_codegen.imports import ImportGroups, import_block
from memory_bank_codegen.naming import pascal_case
from memory_bank_codegen.operations import Operation

IMPORTS: ImportGroups = (
    {"typing": ("Literal", "Protocol")},
    {
        "memory_bank.reply": ("Reply", "TextStream"),
        "memory_bank.generated": ("models",),
        "memory_bank.security.principal": ("Principal",),
    },
)


def render_interface(operations: list[Operation], spec: dict[str, Any]) -> str:
    name = pascal_case(spec["info"]["title"]) + "Api"
    methods = "\n\n".join(_render_method(op) for op in operations)
    doc = f'    """What the generated router calls: implement every method to serve {spec["info"]["title"]}."""'
    body = f"class {name}(Protocol):\n{doc}\n\n{methods}\n"
    return import_block(body, IMPORTS) + "\n\n" + body


def _render_method(op: Operation) -> str:
    args = ["self", "principal: Principal"]
    keyword = [f"{p.python_name}: {p.type_expr}{_default(p.required, p.default)}" for p in op.parameters]
    if op.body:
        keyword.insert(sum(p.required for p in op.parameters), f"body: {op.body.type_expr}")
    if keyword:
        args += ["*", *keyword]
    signature = ",\n        ".join(args)
    return (
        f"    async def {op.python_name}(\n        {signature},\n    ) -> Reply[{op.reply_type}]:\n"
        f'        """{op.operation_id}: {op.method} {op.path}. {op.summary}."""\n'
        "        ..."
    )


def _default(required: bool, default: Any) -> str:
    return "" if required else f" = {default!r}"
