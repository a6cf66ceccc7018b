"""What a string that fails a spec ``pattern`` is told: its schema's ``x-pattern-message``, where it has one.

Content's pattern (one visible character, spelled as sixty-odd escapes and characters)
quoted back tells a caller nothing it can act on. The spec says in words what such a
pattern asks for, beside it, and every door that names a failed pattern (REST's model
errors, MCP's argument errors, import lines) says those words instead.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from memory_bank.generated.spec import SPEC


@cache
def _messages() -> dict[str, str]:
    found: dict[str, str] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            pattern, message = node.get("pattern"), node.get("x-pattern-message")
            if isinstance(pattern, str) and isinstance(message, str):
                found[pattern] = message
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(SPEC)
    return found


def pattern_message(pattern: object) -> str | None:
    """The spec's words for ``pattern``; None where the pattern itself is the clearest message."""
    return _messages().get(pattern) if isinstance(pattern, str) else None
