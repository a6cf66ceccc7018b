"""Build every capability search index before the server takes requests.

The registry builds an index at the first search of each set of APIs a caller may use
(``CapabilityRegistry._index``): term statistics, the classifier the examples train and, for
the hybrid, the embedding of every text. That search ran on the event loop, so each request
in flight waited for it: on a fresh server the first search took 0.8 s (0.7 s of it importing
scikit-learn) and ``/health`` answered in 0.7 s beside it. A token holds a subset of
``PERMISSIONS``, so the sets are few (two on our catalog) and all can be built at start, where
the time is the start's and is logged with it.
"""

from __future__ import annotations

from itertools import combinations

from memory_bank.capabilities.registry import CapabilityRegistry
from memory_bank.security.principal import Principal
from memory_bank.security.tokens import PERMISSIONS

__all__ = ["warm_up"]


def warm_up(registry: CapabilityRegistry) -> int:
    """Build the index of every set of APIs some token's permissions reach; how many there are."""
    for size in range(1, len(PERMISSIONS) + 1):
        for chosen in combinations(sorted(PERMISSIONS), size):
            holder = Principal(token_id="", org_id="", user_id="", agent_id=None, permissions=frozenset(chosen))
            registry.prepare(holder.allows)
    return registry.indexes
