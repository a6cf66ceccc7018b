"""Identifier spelling shared by every renderer, so a name is spelled one way everywhere."""

from __future__ import annotations

import keyword
import re

_WORD_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|[^A-Za-z0-9]+")


def snake_case(name: str) -> str:
    """``postMemoryFeedback`` -> ``post_memory_feedback``; ``Idempotency-Key`` -> ``idempotency_key``."""
    words = [w for w in _WORD_BOUNDARY.split(name) if w]
    ident = "_".join(w.lower() for w in words) or "_"
    if ident[0].isdigit():
        ident = f"_{ident}"
    return f"{ident}_" if keyword.iskeyword(ident) else ident


def pascal_case(name: str) -> str:
    """``memory_page`` or ``memoryPage`` -> ``MemoryPage``; keeps an existing PascalCase name as it is."""
    words = [w for w in _WORD_BOUNDARY.split(name) if w]
    ident = "".join(w[:1].upper() + w[1:] for w in words) or "Model"
    return f"M{ident}" if ident[0].isdigit() else ident
