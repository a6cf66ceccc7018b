"""What a regeneration changes, operation by operation: added, removed, and what changed in the rest.

A spec edit reaches agents as tools, so its reviewer wants "getMemorySearch: parameters,
responses" rather than a diff of generated files. The old side is the spec the
committed code was generated from (``generated/spec.json``), so the report is exactly
what the commit will change. ``$ref``s are expanded first: editing a shared schema
shows up on every operation that uses it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_bank_codegen.loader import iter_operations
from memory_bank_codegen.refs import resolve_ref

#: The parts of an operation a change is reported by, in the order they are listed.
ASPECTS = ("route", "summary", "description", "tags", "x-capability", "security", "parameters", "requestBody", "responses")


@dataclass(frozen=True)
class OperationChanges:
    added: list[str]
    removed: list[str]
    changed: dict[str, list[str]]  # operationId -> aspects that differ

    def report(self) -> list[str]:
        """Lines for a person: a count, then ``+``/``-``/``~`` per operation."""
        if not (self.added or self.removed or self.changed):
            return ["operations: none added, removed or changed"]
        lines = [f"operations: {len(self.added)} added, {len(self.removed)} removed, {len(self.changed)} changed"]
        lines += [f"  + {name}" for name in self.added]
        lines += [f"  - {name}" for name in self.removed]
        lines += [f"  ~ {name}: {', '.join(aspects)}" for name, aspects in self.changed.items()]
        return lines


def _expand(node: Any, spec: dict[str, Any], seen: frozenset[str] = frozenset()) -> Any:
    """``node`` with every local ``$ref`` replaced by what it names (a cyclic one is left as the ref)."""
    if isinstance(node, list):
        return [_expand(item, spec, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref not in seen:
        target = resolve_ref(spec, ref)
        if target is not None:
            return _expand(target, spec, seen | {ref})
    return {key: _expand(value, spec, seen) for key, value in node.items()}


def _aspects(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """operationId -> each aspect's expanded value (path-level parameters count as the operation's)."""
    found: dict[str, dict[str, Any]] = {}
    for entry in iter_operations(spec):
        operation = entry.operation
        if not isinstance(operation.get("operationId"), str):
            continue
        values = {aspect: operation.get(aspect) for aspect in ASPECTS}
        values["route"] = f"{entry.method.upper()} {entry.path}"
        values["parameters"] = [*entry.path_item.get("parameters", []), *operation.get("parameters", [])]
        values["security"] = operation.get("security", spec.get("security"))
        found[operation["operationId"]] = _expand(values, spec)
    return found


def compare(old: dict[str, Any], new: dict[str, Any]) -> OperationChanges:
    before, after = _aspects(old), _aspects(new)
    changed = {
        name: [aspect for aspect in ASPECTS if before[name][aspect] != after[name][aspect]]
        for name in sorted(before.keys() & after.keys())
    }
    return OperationChanges(
        added=sorted(after.keys() - before.keys()),
        removed=sorted(before.keys() - after.keys()),
        changed={name: aspects for name, aspects in changed.items() if aspects},
    )


def committed_spec(out_dir: Path) -> dict[str, Any]:
    """The spec the committed generated code came from; empty when there is none yet (or it is broken)."""
    try:
        spec = json.loads((out_dir / "spec.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return spec if isinstance(spec, dict) else {}
