"""A wall clock pinned mid-minute, for apps whose per-minute budgets a test spends.

Budgets count calendar minutes; on the real clock a test that started near the end of
one could see its budget reset halfway. Pinned 15 s into a minute, it never does.
"""

from __future__ import annotations

#: An arbitrary calendar minute (epoch seconds), 15 s in: Retry-After there is 45.
PINNED = 29_000_000 * 60 + 15.0


def pinned() -> float:
    return PINNED
