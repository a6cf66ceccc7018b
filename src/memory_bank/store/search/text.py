"""Memory text -> search terms, one function for what is indexed and what is asked.

Neither index can be trusted to normalise alike: SQLite's FTS5 has a Porter
tokenizer, InnoDB FULLTEXT has no stemmer at all, and their word splits and case
rules differ. So both backends index the same derived column, ``search_text``:
the memory's words folded (case, compatibility forms, accents), function words
dropped and stemmed (``textsearch.tokenize.folded_terms``), joined by single
spaces and padded with one space at each end. Queries go through the same
function, so ``prefers`` finds ``preferred`` on both backends, and the padding
makes the substring test ``" term " in search_text`` an exact whole-term test.

What is indexed is everything textual a memory carries: ``content``, its ``tags``
(e.g. a speaker's name) and its contexts' snippets (e.g. the quote or caption it
came from): questions name people and places that a turn's own words rarely do
(``docs/decisions/0004-memory-lexical-ranking.md``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from memory_bank.textsearch.tokenize import folded_terms

__all__ = ["MAX_TERMS", "query_terms", "search_text"]

#: A query is cut to this many distinct terms: each term costs one test per searched row.
MAX_TERMS = 32


def query_terms(q: str) -> list[str]:
    """The distinct terms of a query, in order, at most MAX_TERMS."""
    return list(dict.fromkeys(folded_terms(q, query=True)))[:MAX_TERMS]


def search_text(content: str, tags: Iterable[str] = (), contexts: Iterable[Mapping[str, Any]] = ()) -> str:
    """The indexed form of a memory: ``" term term ... "`` (see the module docstring)."""
    parts = [content, *tags, *(str(c.get("snippet") or "") for c in contexts)]
    return " " + " ".join(term for part in parts for term in folded_terms(part)) + " "
