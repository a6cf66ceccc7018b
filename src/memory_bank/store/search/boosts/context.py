"""Memories from one origin lend each other relevance.

A memory's contexts name where it came from (``origin``: a session, file, URL or
channel). Memories of one origin are about related things, so when several of them
match a query, each is more likely to be what the reader wants than an equally good
match that stands alone: the cluster hypothesis of IR (van Rijsbergen, 1979), used
here as passage retrieval uses a document's score. An answer often sits in the turn
next to the one that names the topic ("when did she go?" - "yesterday").

Among the candidates search has already ranked, a memory whose best other candidate
of a shared origin scores ``n`` moves ``WEIGHT * n`` of the way from its score ``s``
towards 1: ``s + WEIGHT * n * (1 - s)``. The score stays in [0, 1]; it is unchanged
for a memory that shares no origin with another candidate (so memories without
contexts rank as before), and within one origin the order stands, since the step
grows with ``n`` and shrinks with ``s`` at a rate below 1.

``WEIGHT`` is the smallest of the weights measured, all of which gained
(``docs/decisions/0004-memory-lexical-ranking.md``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["WEIGHT", "boosted", "origins"]

#: Share of the gap to 1 that the best same-origin neighbour's score closes.
WEIGHT = 0.1


def origins(contexts: Iterable[Mapping[str, Any]] | None) -> frozenset[str]:
    """The non-empty ``origin`` values of a memory's stored contexts."""
    return frozenset(o for c in contexts or () if isinstance(o := c.get("origin"), str) and o)


def boosted(scores: Mapping[int, float], origins_of: Mapping[int, frozenset[str]]) -> dict[int, float]:
    """pk -> score after the boost (see the module docstring), for the pks of ``scores``."""
    members: defaultdict[str, list[int]] = defaultdict(list)
    for pk in scores:
        for origin in origins_of.get(pk, frozenset()):
            members[origin].append(pk)
    result = {}
    for pk, score in scores.items():
        neighbour = max(
            (scores[other] for origin in origins_of.get(pk, frozenset()) for other in members[origin] if other != pk),
            default=0.0,
        )
        result[pk] = score + WEIGHT * neighbour * (1 - score)
    return result
