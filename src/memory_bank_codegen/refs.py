"""The one ``$ref`` resolver: local JSON pointers, chains of refs, and the refs a spec gets wrong.

Every reader of a spec (routes, interface, models, catalog, lint, change report) follows
refs through here, so a ref means the same thing everywhere. Following is cycle-safe: a
chain that comes back to itself (``A -> B -> A``, which no reader could ever finish) is
reported, never walked. ``deref`` is lenient, for third-party specs where one broken ref
must not cost a whole catalog; ``ref_issues`` is strict, for the specs we generate code
from, and names the operation and the ref that is missing or loops.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from memory_bank_codegen.errors import SpecIssue

__all__ = ["HTTP_METHODS", "chase", "deref", "ref_issues", "resolve_ref"]

#: ``(rule, message)``: why a ref cannot be followed.
Problem = tuple[str, str]

#: OpenAPI's fixed fields of a path item that are operations, in the order we emit them.
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def resolve_ref(spec: dict[str, Any], ref: str) -> Any | None:
    """The value a local JSON pointer (``#/a/b~1c``) names in ``spec``; None if it names nothing."""
    if not ref.startswith("#"):
        return None  # remote or relative-file refs are out of reach by design
    node: Any = spec
    for raw in ref[1:].split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def chase(spec: dict[str, Any], obj: Any) -> tuple[Any, Problem | None]:
    """Follow a chain of ``$ref`` from ``obj``: ``(what it ends at, None)`` or ``(None, (rule, why))``.

    Only a ref whose target is itself a ref is followed further; a schema that refers
    to itself from inside (a tree's ``children``) is a recursive type, not a loop.
    """
    chain: list[str] = []
    while isinstance(obj, dict) and isinstance(obj.get("$ref"), str):
        ref = obj["$ref"]
        if ref in chain:
            return None, ("ref-cycle", " -> ".join([*chain[chain.index(ref) :], ref]))
        chain.append(ref)
        obj = resolve_ref(spec, ref)
        if obj is None:
            return None, ("ref-missing", f"{ref} names nothing in this document")
    return obj, None


def deref(spec: dict[str, Any], obj: Any) -> dict[str, Any] | None:
    """The parameter/response/body/path item a (chain of) ``$ref`` names; None if broken or looping."""
    target, _ = chase(spec, obj)
    return target if isinstance(target, dict) else None


def _refs_within(node: Any) -> Iterator[dict[str, Any]]:
    """Every mapping with a ``$ref`` inside ``node`` (refs themselves not followed)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("$ref"), str):
                yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _problems_reached(spec: dict[str, Any], node: Any, checked: set[str]) -> Iterator[Problem]:
    """The broken refs ``node`` reaches, through refs too (each ref looked at once)."""
    pending = [node]
    while pending:
        for holder in _refs_within(pending.pop()):
            ref = holder["$ref"]
            if ref in checked:
                continue
            checked.add(ref)
            target, problem = chase(spec, holder)
            if problem is not None:
                yield problem
            else:
                pending.append(target)


def _issue(where: str, problem: Problem) -> SpecIssue:
    return SpecIssue(where, *problem)


def ref_issues(spec: dict[str, Any]) -> list[SpecIssue]:
    """Every missing or looping ref, on the first operation that reaches it (``spec`` for the rest)."""
    issues: list[SpecIssue] = []
    checked: set[str] = set()
    paths = spec.get("paths")
    for path, item in paths.items() if isinstance(paths, dict) else ():
        resolved, problem = chase(spec, item)
        if problem is not None or not isinstance(resolved, dict):
            issues.append(_issue(path, problem or ("path-item", "not a mapping")))
            continue
        for method in HTTP_METHODS:
            operation = resolved.get(method)
            if not isinstance(operation, dict):
                continue
            operation_id = operation.get("operationId")
            where = operation_id if isinstance(operation_id, str) else f"{method.upper()} {path}"
            reached = {"parameters": resolved.get("parameters"), "operation": operation}
            issues += (_issue(where, p) for p in _problems_reached(spec, reached, checked))
    issues += (_issue("spec", p) for p in _problems_reached(spec, spec, checked))
    return issues
