"""Which known name a client's unknown one most likely misspells, for the "did you mean" of an error."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

#: A misspelt name is offered its neighbour only when this close (difflib's ratio).
CLOSE_MATCH = 0.8


def closest(name: str, known: Sequence[str]) -> str | None:
    """The one of ``known`` that ``name`` most likely misspells: the same name in another case
    (``postmemory``), else the nearest spelling at least ``CLOSE_MATCH`` alike; None when none is."""
    folded = name.casefold()
    same = next((candidate for candidate in known if candidate.casefold() == folded), None)
    if same is not None:
        return same
    close = difflib.get_close_matches(name, known, 1, CLOSE_MATCH)
    return close[0] if close else None
