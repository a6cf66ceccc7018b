"""One least-recently-used map bounded by bytes, for what search keeps per owner in the process
(``postings``, ``vector_cache``): whatever is held never takes more than the budget, the
least recently used entry goes first to make room, and an entry larger than the whole
budget is refused rather than emptying the map for it."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, Protocol, TypeVar

__all__ = ["BoundedLRU", "PartitionCache", "Sized"]


class Sized(Protocol):
    @property
    def nbytes(self) -> int: ...


K = TypeVar("K")
V = TypeVar("V", bound=Sized)


class BoundedLRU(Generic[K, V]):
    """Thread-safe; values are immutable (a refresh puts a new one), so a reader may go on using
    one that another thread replaces or evicts."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def held(self) -> int:
        """Bytes the entries take now (at most ``budget``)."""
        with self._lock:
            return self._bytes

    def keys(self) -> list[K]:
        """The keys held, least recently used first."""
        with self._lock:
            return list(self._entries)

    def get(self, key: K) -> V | None:
        """The value held for ``key``, now the most recently used, or None."""
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> bool:
        """Hold ``value`` for ``key`` (replacing what was), evicting the least recently used to
        make room; False, and ``key`` no longer held, when it is larger than the whole budget."""
        with self._lock:
            old = self._entries.pop(key, None)
            self._bytes -= old.nbytes if old is not None else 0
            if value.nbytes > self.budget:
                return False
            while self._entries and self._bytes + value.nbytes > self.budget:
                self._bytes -= self._entries.popitem(last=False)[1].nbytes
            self._entries[key] = value
            self._bytes += value.nbytes
            return True


class PartitionCache(Generic[K, V]):
    """What a per-partition cache of search (``postings``, ``vector_cache``) holds in its one
    :class:`BoundedLRU`: its budget, the bytes held and the partitions, for tests and benches."""

    def __init__(self, budget: int) -> None:
        self._blocks: BoundedLRU[K, V] = BoundedLRU(budget)

    @property
    def budget(self) -> int:
        return self._blocks.budget

    @property
    def held(self) -> int:
        """Bytes the cached partitions take now (at most ``budget``)."""
        return self._blocks.held

    def partitions(self) -> list[K]:
        """The cached partitions, least recently used first."""
        return self._blocks.keys()
