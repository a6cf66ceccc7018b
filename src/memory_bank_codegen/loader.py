"""Load an OpenAPI 3.x document from YAML or JSON into plain, JSON-compatible data.

Everything downstream (lint, schema conversion, catalog) assumes JSON semantics:
string keys, no dates, only ``true``/``false`` as booleans. PyYAML speaks YAML 1.1,
where a bare ``on``/``yes``/``no`` is a boolean, ``2024-01-01`` a date and ``200`` an
int key; the loader here pins those to YAML 1.2 / JSON meaning so that a response
code stays ``"200"`` and an enum value ``no`` stays a string.
"""

from __future__ import annotations

import json
import re
from collections.abc import Hashable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from yaml.nodes import MappingNode, ScalarNode

from memory_bank_codegen.refs import HTTP_METHODS, deref

__all__ = ["Operation", "SpecError", "iter_operations", "load_spec", "operation_parameters"]

_BOOL_TAG = "tag:yaml.org,2002:bool"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


class SpecError(Exception):
    """A spec that cannot be used at all; the message always names the file."""

    def __init__(self, path: str | Path, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = str(path)
        self.message = message


class _SpecLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 booleans, no timestamps, string keys, no duplicate keys."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        self.flatten_mapping(node)
        mapping: dict[Hashable, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):
                if not isinstance(key_node, ScalarNode):
                    raise yaml.constructor.ConstructorError(
                        None, None, "mapping keys must be scalars", key_node.start_mark
                    )
                key = key_node.value  # the text as written: 200 -> "200", on -> "on"
            if key in mapping:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping


_SpecLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_BOOL_TAG, _TIMESTAMP_TAG)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_SpecLoader.add_implicit_resolver(
    _BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def _parse(path: Path, text: str) -> Any:
    """JSON first when the file says so (fast on multi-megabyte specs), else YAML."""
    looks_like_json = path.suffix.lower() == ".json" or text.lstrip().startswith("{")
    if looks_like_json:
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            if path.suffix.lower() == ".json":
                raise SpecError(path, f"invalid JSON: {exc}") from exc
    try:
        return yaml.load(text, Loader=_SpecLoader)  # noqa: S506 - _SpecLoader is a SafeLoader
    except yaml.YAMLError as exc:
        raise SpecError(path, f"invalid YAML: {exc}") from exc


def load_spec(path: str | Path) -> dict[str, Any]:
    """Read and parse an OpenAPI 3.x document; raise SpecError when it is not one."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(path, f"cannot read: {exc}") from exc
    spec = _parse(path, text)
    if not isinstance(spec, dict):
        raise SpecError(path, f"not a mapping at the top level (got {type(spec).__name__})")
    version = spec.get("openapi")
    if not isinstance(version, str) or not version.startswith("3."):
        raise SpecError(path, f"not an OpenAPI 3.x document (openapi: {version!r})")
    if not isinstance(spec.get("paths", {}), dict):
        raise SpecError(path, "'paths' is not a mapping")
    return spec


class Operation(NamedTuple):
    """One operation with the path item it lives in (for path-level parameters)."""

    path: str
    method: str
    operation: dict[str, Any]
    path_item: dict[str, Any]


def iter_operations(spec: dict[str, Any]) -> Iterator[Operation]:
    """Every operation in path order, then method order; junk entries are skipped.

    Path-item ``$ref``s (allowed in 3.1) are followed when they are local.
    """
    paths = spec.get("paths")
    for path, item in (paths.items() if isinstance(paths, dict) else ()):
        item = deref(spec, item)
        if item is None:
            continue
        for method in HTTP_METHODS:
            if isinstance(item.get(method), dict):
                yield Operation(path, method, item[method], item)


def operation_parameters(op: Operation, spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Path-level then operation-level parameters, refs followed; an operation's wins on (in, name)."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for owner in (op.path_item, op.operation):
        raw = owner.get("parameters")
        for param in (deref(spec, p) for p in (raw if isinstance(raw, list) else ())):
            if param and isinstance(param.get("name"), str) and isinstance(param.get("in"), str):
                merged[(param["in"], param["name"])] = param
    return list(merged.values())
