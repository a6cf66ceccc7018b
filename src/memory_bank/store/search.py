"""What every full-text backend shares: query words, the score rule, the backend interface.

A dialect module (``search_sqlite`` now, ``search_mysql`` next) implements
``SearchBackend``; ``database.search_backend`` picks it from the engine's dialect so
that ``MemoryStore`` never branches on the database.

Score rule (the same on every backend, so ``min_score`` means one thing):

    score = (m - 1 / (2 * (s + 1))) / n

where ``n`` is the number of distinct query terms, ``m`` (1..n) how many of them a
memory matches, and ``s >= 0`` the backend's raw relevance (``-bm25`` on SQLite,
``MATCH ... AGAINST`` on MySQL). Each value of ``m`` owns the band
``[(m - 1/2) / n, m / n)``, so a memory matching more query words always ranks
first, ``s`` orders memories within a band, the score is monotone in both and lies
in (0, 1); a memory matching every word scores at least ``1 - 1/(2n)``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from sqlalchemy import ColumnElement
from sqlalchemy.engine import Connection
from sqlmodel import Session

from memory_bank.store.tables import MemoryRow

#: A query is cut to this many distinct terms: each term costs one index probe.
MAX_TERMS = 32

#: Function words that match nearly every memory and so only add noise. A query made
#: only of these (or of punctuation) has no terms and finds nothing.
STOPWORDS = frozenset(
    """a about all also am an and any are as at be been but by can could did do does
    for from had has have he her his how i if in into is it its me my no not of on or
    our she should so some than that the their them then there these they this those
    to us was we were what when where which who whom why will with would you your""".split()
)

# Letters and digits only: the same split as SQLite's unicode61 tokenizer and close to
# MySQL's, so a term we send is a term the index holds.
_WORD = re.compile(r"[^\W_]+")

Score = TypeVar("Score", float, ColumnElement[Any])


def query_terms(q: str) -> list[str]:
    """The distinct, lower-cased, non-stopword words of ``q``, in order, at most MAX_TERMS."""
    words = _WORD.findall(unicodedata.normalize("NFKC", q).casefold())
    return list(dict.fromkeys(w for w in words if w not in STOPWORDS))[:MAX_TERMS]


def score(matched: Score, relevance: Score, terms: int) -> Score:
    """The module's score rule; works on Python numbers and on SQL expressions alike."""
    return (matched - 0.5 / (relevance + 1.0)) / terms


class SearchBackend(Protocol):
    """The dialect-specific half of search: index DDL, tag test and the ranked query."""

    def install(self, connection: Connection) -> None:
        """Create the full-text index and whatever keeps it in sync; safe to run again."""
        ...

    def has_tag(self, tag: str) -> ColumnElement[bool]:
        """True for memory rows whose JSON ``tags`` array contains ``tag``."""
        ...

    def ranked(
        self,
        session: Session,
        where: Sequence[ColumnElement[bool]],
        terms: Sequence[str],
        limit: int,
        min_score: float,
    ) -> list[tuple[MemoryRow, float]]:
        """Rows matching any term and every ``where`` clause, best ``score`` first.

        Ties go to the newer memory. ``terms`` is never empty.
        """
        ...

