"""The capability search indexes are built when ``serve`` starts, not at the first search of each
set of operations: that search trained a classifier (and imported scikit-learn) on the event
loop, so every request in flight waited for it (0.7 s for /health on a fresh server)."""

from __future__ import annotations

from itertools import combinations

from memory_bank.capabilities.registry import CapabilityRegistry
from memory_bank.capabilities.warm_up import warm_up
from memory_bank.generated.catalog import CAPABILITIES
from memory_bank.security.principal import Principal
from memory_bank.security.tokens import PERMISSIONS


def _principal(permissions: tuple[str, ...]) -> Principal:
    return Principal(token_id="t", org_id="acme", user_id="ann", agent_id=None, permissions=frozenset(permissions))


def test_after_the_warm_up_no_permission_set_builds_an_index() -> None:
    registry = CapabilityRegistry(CAPABILITIES)
    built = warm_up(registry)
    every = [_principal(chosen) for size in range(1, len(PERMISSIONS) + 1) for chosen in combinations(sorted(PERMISSIONS), size)]
    distinct = {frozenset(c["source"] for c in registry.allowed(p.allows)) for p in every}  # one index per set of APIs
    assert built == registry.indexes == len(distinct)
    for principal in every:
        assert registry.search("save a memory", allows=principal.allows).results
    assert registry.indexes == built


def test_the_warm_up_answers_as_the_lazy_build_does() -> None:
    warm, lazy = CapabilityRegistry(CAPABILITIES), CapabilityRegistry(CAPABILITIES)
    warm_up(warm)
    for permissions in (("memory:read",), ("memory:write",), ("memory:admin",), ("memory:read", "memory:write")):
        allows = _principal(permissions).allows
        for request in ("save a memory", "forget mem_01JA2B3C4D5E6F7G8H9J", "who can use my tokens?"):
            assert warm.search(request, allows=allows) == lazy.search(request, allows=allows)
