"""Rank capabilities for a natural-language request (``search_capabilities``).

An agent describes what it wants ("is today a holiday in China?") and needs the
one operation among hundreds that does it. The index is built once, in memory, at
construction; a query then only touches the postings of its own terms.

Scores are BM25 normalised into [0, 1] by the query's own ceiling: the score a
document would get if it contained every query term infinitely often
(``sum(idf(t) * (k1 + 1))``, a word no capability uses counting at the highest idf).
So 1.0 means "every query word, saturated", the value
does not depend on what else is in the registry's top k, and a caller can apply
a fixed ``min_score``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memory_bank.capabilities.text import terms

__all__ = ["CapabilitySearch", "Match"]

Capability = Mapping[str, Any]

#: Standard BM25 constants (Robertson & Zaragoza): term-frequency saturation and
#: length normalisation.
K1 = 1.2
B = 0.75


@dataclass(frozen=True)
class Match:
    """One ranked capability; ``score`` is in [0, 1], higher is better."""

    capability: Capability
    score: float


def _parameter_names(capability: Capability) -> Iterable[str]:
    """Names (and descriptions) of every path/query/header/body argument."""
    groups = (capability.get("inputSchema") or {}).get("properties") or {}
    for group in groups.values():
        props = group.get("properties") if isinstance(group, Mapping) else None
        for name, schema in (props or {}).items():
            yield name
            if isinstance(schema, Mapping) and isinstance(schema.get("description"), str):
                yield schema["description"]


def _document(capability: Capability) -> list[str]:
    """All the searchable text of a capability, as terms."""
    parts = [
        str(capability.get("name") or ""),
        str(capability.get("title") or ""),
        str(capability.get("description") or ""),
        " ".join(t for t in capability.get("tags") or () if isinstance(t, str)),
        str(capability.get("path") or ""),
        *_parameter_names(capability),
    ]
    return terms(" ".join(parts))


class CapabilitySearch:
    """An in-memory BM25 index over a fixed list of capabilities."""

    def __init__(self, capabilities: Sequence[Capability]) -> None:
        self._capabilities = list(capabilities)
        docs = [Counter(_document(c)) for c in self._capabilities]
        self._lengths = [sum(d.values()) for d in docs]
        self._avg_length = (sum(self._lengths) / len(docs)) if docs else 0.0
        self._postings: dict[str, list[tuple[int, int]]] = {}
        for doc_id, counts in enumerate(docs):
            for term, tf in counts.items():
                self._postings.setdefault(term, []).append((doc_id, tf))
        n = len(docs)
        self._idf = {t: math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5)) for t, p in self._postings.items()}

    def __len__(self) -> int:
        return len(self._capabilities)

    def search(
        self,
        query: str,
        *,
        limit: int = 5,
        accept: Callable[[Capability], bool] | None = None,
    ) -> list[Match]:
        """The best ``limit`` capabilities for ``query``, best first.

        ``accept`` (e.g. a permission check) is applied before the limit, so a caller
        never gets fewer results just because better ones were filtered out. An empty
        query returns ``[]``: listing by category is the caller's job.
        """
        wanted = list(dict.fromkeys(terms(query)))
        query_terms = [t for t in wanted if t in self._postings]
        if not query_terms or limit <= 0:
            return []
        unseen_idf = math.log(1 + (len(self) + 0.5) / 0.5)
        ceiling = sum(self._idf.get(t, unseen_idf) for t in wanted) * (K1 + 1)
        scores: dict[int, float] = {}
        for term in query_terms:
            idf = self._idf[term]
            for doc_id, tf in self._postings[term]:
                norm = K1 * (1 - B + B * self._lengths[doc_id] / self._avg_length)
                scores[doc_id] = scores.get(doc_id, 0.0) + idf * tf * (K1 + 1) / (tf + norm)
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        matches: list[Match] = []
        for doc_id, score in ranked:
            capability = self._capabilities[doc_id]
            if accept is None or accept(capability):
                matches.append(Match(capability, min(1.0, score / ceiling)))
                if len(matches) == limit:
                    break
        return matches
