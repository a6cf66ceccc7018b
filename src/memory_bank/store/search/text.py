"""Memory text -> search terms, one function for what is indexed and what is asked.

Neither index can be trusted to normalise alike: SQLite's FTS5 has a Porter
tokenizer, InnoDB FULLTEXT has no stemmer at all, and their word splits and case
rules differ. So both backends index the same derived column, ``search_text``:
the memory's words folded (case, compatibility forms, accents), function words
dropped and stemmed with Snowball's English (Porter2) stemmer, joined by single
spaces and padded with one space at each end. Queries go through the same
:func:`terms`, so ``prefers`` finds ``preferred`` on both backends, and the padding
makes the substring test ``" term " in search_text`` an exact whole-term test.

What is indexed is everything textual a memory carries: ``content``, its ``tags``
(e.g. a speaker's name) and its contexts' snippets (e.g. the quote or caption it
came from). On LoCoMo, adding tags and snippets to the indexed text raised evidence
recall@10 from 0.59 to 0.66 (plain BM25 over the turn text alone: 0.59).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

from memory_bank.capabilities.text import stem

#: A query is cut to this many distinct terms: each term costs one test per searched row.
MAX_TERMS = 32

#: Function words that match nearly every memory and so only add noise; dropped from
#: indexed text and queries alike. A query made only of these finds nothing lexically.
STOPWORDS = frozenset(
    """a about all also am an and any are as at be been but by can could did do does
    for from had has have he her his how i if in into is it its me my no not of on or
    our she should so some than that the their them then there these they this those
    to us was we were what when where which who whom why will with would you your""".split()
)

# Runs of letters and digits: every separator (space, punctuation, ``_``) splits.
_WORD = re.compile(r"[^\W_]+")


def fold(text: str) -> str:
    """Lower-cased, compatibility-normalised, accents dropped (``Café`` -> ``cafe``)."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def terms(text: str) -> list[str]:
    """The search terms of ``text`` in order: folded words, stopwords dropped, stemmed."""
    return [stem(word) for word in _WORD.findall(fold(text)) if word not in STOPWORDS]


def query_terms(q: str) -> list[str]:
    """The distinct terms of a query, in order, at most MAX_TERMS."""
    return list(dict.fromkeys(terms(q)))[:MAX_TERMS]


def search_text(content: str, tags: Iterable[str] = (), contexts: Iterable[Mapping[str, Any]] = ()) -> str:
    """The indexed form of a memory: ``" term term ... "`` (see the module docstring)."""
    parts = [content, *tags, *(str(c.get("snippet") or "") for c in contexts)]
    return " " + " ".join(term for part in parts for term in terms(part)) + " "

