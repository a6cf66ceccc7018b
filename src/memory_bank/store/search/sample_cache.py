"""The sampled rows of owners too large to scan, kept for a minute.

A search over an owner of more than ``search_lexical.SCAN_ROWS`` memories reads
``SAMPLE_ROWS`` of them for its BM25 statistics and lets the full-text index find the
candidates. That read was the largest part of such a search: 41 ms of an 88 ms p50
on MariaDB (23 ms on SQLite) for an owner of 100,000 memories. Statistics are ratios
(how many rows hold a term, their mean length), which a minute's new memories cannot
move for an owner of that size, so the sample is kept per searched row set (the WHERE
clause: owner, versions, filters) for :data:`TTL` seconds. Candidates still come from
the index on every search, so a memory saved a second ago is found; only its weight
in the statistics waits for the next sample.

Only large owners are kept (a smaller one is scanned whole on every search, which
must see every row), at most :data:`SIZE` of them, least recently used first out:
a sample of 20,000 rows of bench text is 5.8 MB (measured with tracemalloc), so the
cache holds 50 MB at most.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence

__all__ = ["SIZE", "TTL", "Row", "SampleCache"]

#: Seconds a sample is used for.
TTL = 60.0
#: Samples kept at most.
SIZE = 8

Row = tuple[int, str]  # pk, search_text
Key = tuple[str, str]  # the WHERE clause's SQL and its parameters


class SampleCache:
    """A small LRU of ``key -> sampled rows`` whose entries expire after ``ttl`` seconds."""

    def __init__(self, ttl: float = TTL, size: int = SIZE, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl, self._size, self._clock = ttl, size, clock
        self._entries: OrderedDict[Key, tuple[float, Sequence[Row]]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Key) -> Sequence[Row] | None:
        """The rows kept for ``key``, or None when there are none or they are older than the TTL."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or self._clock() - entry[0] > self._ttl:
                self._entries.pop(key, None)
                return None
            self._entries.move_to_end(key)
            return entry[1]

    def put(self, key: Key, rows: Sequence[Row]) -> None:
        with self._lock:
            self._entries[key] = (self._clock(), rows)
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
