"""Render the data the package carries: the served spec and the capability catalog, as JSON.

JSON is what both are (a spec and MCP tool descriptions), so they ship as package data
rather than as Python literals: a reader sees the catalog as a client receives it, and
each is parsed once, when its small reader module is first imported. Keys keep the
spec's own order, so the files are byte-stable across runs.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["render_catalog", "render_json", "render_reader"]


def render_json(value: Any) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False) + "\n"


def render_catalog(capabilities: list[dict[str, Any]]) -> str:
    return render_json(capabilities)


def render_reader(name: str, annotation: str, data: str, doc: str, *, as_tuple: bool = False) -> str:
    """A module that reads ``data`` (a JSON file beside it) once, into ``name``."""
    value = f'json.loads(files(__package__).joinpath("{data}").read_text(encoding="utf-8"))'
    return (
        f'"""{doc}"""\n\n'
        "import json\nfrom importlib.resources import files\nfrom typing import Any\n\n"
        f"{name}: {annotation} = {f'tuple({value})' if as_tuple else value}\n"
    )
