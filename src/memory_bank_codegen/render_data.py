"""Render modules that carry data rather than code: the served spec and the capability catalog.

Both are written as Python literals so that an installed wheel needs no data files and
importing them costs no parsing; ``pprint`` with ``sort_dicts=False`` keeps the spec's own
order and is byte-stable across runs.
"""

from __future__ import annotations

import pprint
from typing import Any


def _literal(value: Any) -> str:
    return pprint.pformat(value, width=100, sort_dicts=False)


def render_spec(spec: dict[str, Any]) -> str:
    return (
        '"""The handwritten spec as a Python literal; the app serves it at ``/openapi.json``."""\n\n'
        "from typing import Any\n\n"
        f"SPEC: dict[str, Any] = {_literal(spec)}\n"
    )


def render_catalog(capabilities: list[dict[str, Any]]) -> str:
    return (
        '"""One capability per exposed operation: what ``search_capabilities`` ranks and MCP lists."""\n\n'
        "from typing import Any\n\n"
        f"CAPABILITIES: tuple[dict[str, Any], ...] = {_literal(tuple(capabilities))}\n"
    )
