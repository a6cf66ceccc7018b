"""Several specs as one service: names unique across them, and the one document that is served.

Each spec is checked alone first (refs, OpenAPI, house rules); here they meet. An
operationId or a path may belong to one spec only, or a route and a tool would have two
meanings. A component (schema, response, parameter...) may be written in several specs
under one name only if it is the same definition in each: the admin spec repeats the
problem document the memory spec defines, so that each spec stands alone, and the merged
document keeps one. The first spec is the main one: the served document takes its
``info``, ``servers`` and ``security``, and the others add paths, components and tags.
"""

from __future__ import annotations

import copy
from typing import Any

from memory_bank_codegen.errors import CodegenError, SpecIssue
from memory_bank_codegen.loader import iter_operations


def merged_spec(specs: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """One document holding every ``(label, spec)``'s paths and components; ``CodegenError`` on a clash."""
    (main_label, main), *others = specs
    merged = copy.deepcopy(main)
    paths: dict[str, Any] = merged.setdefault("paths", {})
    components: dict[str, Any] = merged.setdefault("components", {})
    tags: list[Any] = merged.setdefault("tags", [])
    path_owner = dict.fromkeys(paths, main_label)
    operation_owner = {op_id: main_label for op_id in _operation_ids(main)}
    component_owner = {(section, name): main_label for section, entries in components.items() for name in entries}
    issues: list[SpecIssue] = []
    for label, spec in others:
        for op_id in _operation_ids(spec):
            if op_id in operation_owner:
                issues.append(SpecIssue(op_id, "unique-operation-id", f"defined in {operation_owner[op_id]} and in {label}"))
            operation_owner.setdefault(op_id, label)
        for path, item in spec.get("paths", {}).items():
            if path in path_owner:
                issues.append(SpecIssue(path, "unique-path", f"served by {path_owner[path]} and by {label}"))
                continue
            path_owner[path] = label
            paths[path] = copy.deepcopy(item)
        for section, entries in spec.get("components", {}).items():
            target = components.setdefault(section, {})
            for name, definition in entries.items():
                if name not in target:
                    component_owner[(section, name)] = label
                    target[name] = copy.deepcopy(definition)
                elif target[name] != definition:
                    issues.append(
                        SpecIssue(
                            "spec",
                            "unique-component",
                            f"components/{section}/{name} means one thing in {component_owner[(section, name)]} "
                            f"and another in {label}: make them equal or rename one",
                        )
                    )
        known = {tag.get("name") for tag in tags if isinstance(tag, dict)}
        tags += [copy.deepcopy(t) for t in spec.get("tags", []) if isinstance(t, dict) and t.get("name") not in known]
    if issues:
        raise CodegenError(*issues)
    return merged


def _operation_ids(spec: dict[str, Any]) -> list[str]:
    return [op.operation["operationId"] for op in iter_operations(spec) if isinstance(op.operation.get("operationId"), str)]
