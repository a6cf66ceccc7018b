"""What every full-text backend shares: the score rule and the dialect interface.

Search is one pipeline on every database (``pipeline``): candidates and owner-local
statistics from SQL (``lexical``), BM25 over the derived ``search_text`` column
(``textsearch.bm25``, terms from ``text``), optionally fused with embeddings
(``semantic``), lifted by matches of the same origin (``boosts.context``) and nudged
by feedback recorded with ``postMemoryFeedback`` (``boosts.feedback``). A dialect
module (``backends.sqlite``, ``backends.mysql``) only supplies what SQL cannot say
portably: the full-text index DDL, the JSON tag test, which terms its index cannot hold,
and the index's "contains any (or all) of these terms" test for owners too large to scan. So the
two backends return the same ranking for the same rows.

Score rule of the lexical signal (the same on every backend, so ``min_score``
means one thing):

    score = (m - 1 / (2 * (s + 1))) / n

where ``n`` is the number of distinct query terms, ``m`` (1..n) how many of them a
memory matches, and ``s >= 0`` its BM25 over the searched rows. Each value of ``m``
owns the band ``[(m - 1/2) / n, m / n)``, so a memory matching more query terms ranks
first, ``s`` orders memories within a band, the score is monotone in both and lies
in (0, 1); a memory matching every term scores at least ``1 - 1/(2n)``.

Coordination bands rather than BM25 alone because a question's terms are mostly
names and topics, and a memory naming more of them is the better answer whatever
their idf; BM25 (Lucene's k1 and b, untuned) orders memories within a band. The
measurements: ``docs/decisions/0004-memory-lexical-ranking.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from sqlalchemy import ColumnElement
from sqlalchemy.engine import Connection
from sqlmodel import Session

__all__ = ["SearchBackend", "score"]

Score = TypeVar("Score", float, ColumnElement[Any])


def score(matched: Score, relevance: Score, terms: int) -> Score:
    """The module's score rule; works on Python numbers and on SQL expressions alike."""
    return (matched - 0.5 / (relevance + 1.0)) / terms


class SearchBackend(Protocol):
    """The dialect-specific part of search."""

    def install(self, connection: Connection) -> None:
        """Create the full-text index over ``search_text`` (and whatever keeps it in sync),
        after filling ``search_text`` where it is missing; safe to run again."""
        ...

    def has_tag(self, tag: str) -> ColumnElement[bool]:
        """True for memory rows whose JSON ``tags`` array contains ``tag``."""
        ...

    def unindexed(self, session: Session, terms: Sequence[str]) -> list[str]:
        """The ``terms`` the full-text index holds no entry for (its tokenizer's size limits),
        in order: ``index_match`` is never asked for them."""
        ...

    def index_match(
        self, session: Session, terms: Sequence[str], *, every: bool = False
    ) -> tuple[ColumnElement[bool], ColumnElement[Any]]:
        """(rows whose ``search_text`` holds any term, or with ``every`` all of them, by the
        full-text index; an ascending order that puts the index's most relevant rows first).
        ``terms`` are non-empty and none of them ``unindexed``."""
        ...
