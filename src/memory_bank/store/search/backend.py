"""What every full-text backend shares: the score rule and the dialect interface.

Search is one pipeline on every database (``search_ranking``): candidates and
owner-local statistics from SQL (``search_lexical``), BM25 over the derived
``search_text`` column (``bm25``, terms from ``text``), optionally fused with
embeddings (``embeddings``), lifted by matches of the same origin
(``context_boost``) and nudged by feedback recorded with
``postMemoryFeedback`` (``feedback_boost``). A dialect
module (``search_sqlite``, ``search_mysql``) only supplies what SQL cannot say
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

Why coordination bands rather than BM25 alone: on the LoCoMo dev conversations
(``evals/memory_search.py``) the bands beat plain BM25 on each of the three
conversations (recall@10 +0.01, MRR +0.02 overall); a soft bonus, BM25 times the
matched share, lands between the two, so the leave-one-conversation-out choice is
the bands on every fold. BM25's own parameters are Lucene's defaults (k1 1.2, b 0.75):
over k1 0.6-2.0 and b 0.3-0.9 recall@10 moved by less than 0.02, so nothing was tuned.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from sqlalchemy import ColumnElement
from sqlalchemy.engine import Connection
from sqlmodel import Session

from memory_bank.store.text import MAX_TERMS, STOPWORDS, query_terms

__all__ = ["MAX_TERMS", "STOPWORDS", "SearchBackend", "query_terms", "score"]

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
