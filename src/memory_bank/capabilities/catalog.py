"""Read the generated catalog (``generated/catalog.json``) into the capabilities the registry serves.

The file keeps a schema that many operations share (``Memory``, ``Context``) once, under
``shared``, and points at it with ``{"$shared": name}``; reading puts a fresh copy back
in every place, so each capability's schemas are whole, unaliased, and exactly what
MCP clients are shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SHARED", "load_catalog"]

#: The key of a pointer to a shared definition; the only key of its mapping.
SHARED = "$shared"


def load_catalog(document: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    """The capabilities of a catalog document, every shared definition put back in place."""
    shared: Mapping[str, Any] = document["shared"]

    def expand(node: Any) -> Any:
        if isinstance(node, dict):
            if len(node) == 1 and SHARED in node:
                return expand(shared[node[SHARED]])
            return {key: expand(value) for key, value in node.items()}
        if isinstance(node, list):
            return [expand(item) for item in node]
        return node

    return tuple(expand(capability) for capability in document["capabilities"])
