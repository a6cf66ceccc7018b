"""The query parameters of every operation of the served spec (memory and admin), for edge sweeps."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from memory_bank.generated.spec import SPEC


def _deref(node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        target: Any = SPEC
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def operations() -> Iterator[tuple[str, str, str, list[tuple[str, str]]]]:
    """(operationId, method, path with its ids filled in, [(query parameter, its schema type)])."""
    for path, item in SPEC["paths"].items():
        item = _deref(item)
        for method, operation in item.items():
            if not isinstance(operation, dict) or "operationId" not in operation:
                continue
            parameters = [_deref(p) for p in [*item.get("parameters", []), *operation.get("parameters", [])]]
            query = [(p["name"], _deref(p["schema"]).get("type")) for p in parameters if p["in"] == "query"]
            filled = path
            for p in parameters:
                if p["in"] == "path":
                    filled = filled.replace("{" + p["name"] + "}", "x")
            yield operation["operationId"], method.upper(), filled, query


def query_parameters(array: bool | None = None, kind: str | None = None) -> list[tuple[str, str, str, str]]:
    """Every query parameter as (operationId, method, path, name): the arrays or the others
    (``array``), or those of one schema type (``kind``)."""
    return [
        (op_id, method, path, name)
        for op_id, method, path, query in operations()
        for name, type_ in query
        if (array is None or (type_ == "array") == array) and (kind is None or type_ == kind)
    ]
