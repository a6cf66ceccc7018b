"""Okapi BM25 over the rows one caller searches: the cure for table-wide IDF.

Both full-text indexes weigh a word by how rare it is in the whole table, every
tenant's rows included (InnoDB's relevance, FTS5's ``bm25()``): a word that another
organisation uses a lot counts as common for everyone, so one tenant's ranking would
shift with rows it cannot see. Search therefore scores candidates here, with
statistics of exactly the rows the search ranges over (its WHERE clause: owner,
version, filters), and the indexes only find candidates.

Documents are ``search_text`` values (``store.text``): terms separated by spaces.
Lengths are counted in characters (``len`` of the ``search_text``): BM25 only ever uses
a row's length relative to the mean.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

K1 = 1.2
B = 0.75


@dataclass(frozen=True)
class Corpus:
    """What BM25 needs to know about the searched rows: how many, how long, and each term's document count."""

    documents: int
    mean_length: float
    frequency: Mapping[str, int]

    def idf(self, term: str) -> float:
        """Lucene's BM25 IDF: positive even for a term in every row."""
        df = self.frequency.get(term, 0)
        return math.log(1 + (self.documents - df + 0.5) / (df + 0.5))

    def relevance(self, words: Sequence[str], length: int, terms: frozenset[str]) -> tuple[int, float]:
        """(how many of the distinct ``terms`` occur in a document, its BM25 score); the
        document is its ``search_text`` split into ``words`` and ``length`` characters long."""
        present = terms.intersection(words)  # usually none or one or two: count only those
        if not present:
            return 0, 0.0
        norm = K1 * (1 - B + B * length / max(self.mean_length, 1.0))
        total = 0.0
        for term in present:
            tf = words.count(term)
            total += self.idf(term) * tf * (K1 + 1) / (tf + norm)
        return len(present), total
