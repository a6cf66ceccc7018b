"""Okapi BM25 over the rows one caller searches: the cure for InnoDB's table-wide IDF.

InnoDB weighs a word by how rare it is in the whole table, every tenant's rows
included: a word that another organisation uses a lot counts as common for
everyone, so one tenant's ranking shifts with rows it cannot see. The MySQL
backend therefore scores candidates here, with statistics of exactly the rows the
search ranges over (its WHERE clause: owner, version, filters).

Lengths are counted in characters on both sides (``CHAR_LENGTH`` in SQL, ``len``
here): BM25 only ever uses a row's length relative to the mean.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

K1 = 1.2
B = 0.75

_WORD = re.compile(r"[^\W_]+")


def fold(text: str) -> str:
    """Lower-cased, compatibility-normalised, accents dropped: how ``utf8mb4_unicode_ci`` compares words."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def words(text: str) -> Counter[str]:
    """How often each folded word occurs in ``text``."""
    return Counter(_WORD.findall(fold(text)))


def frequency(documents: Iterable[Counter[str]], terms: Sequence[str]) -> dict[str, int]:
    """In how many ``documents`` each term occurs."""
    counts = dict.fromkeys(terms, 0)
    for document in documents:
        for term in terms:
            counts[term] += term in document
    return counts


@dataclass(frozen=True)
class Corpus:
    """What BM25 needs to know about the searched rows: how many, how long, and each term's document count."""

    documents: int
    mean_length: float
    frequency: Mapping[str, int]

    def idf(self, term: str) -> float:
        """Lucene's BM25 IDF: positive even for a term in every row (InnoDB's would be 0)."""
        df = self.frequency.get(term, 0)
        return math.log(1 + (self.documents - df + 0.5) / (df + 0.5))

    def relevance(self, document: Counter[str], length: int, terms: Sequence[str]) -> tuple[int, float]:
        """(how many distinct ``terms`` occur in the document, its BM25 score); ``terms`` folded."""
        norm = K1 * (1 - B + B * length / max(self.mean_length, 1.0))
        matched, total = 0, 0.0
        for term in terms:
            tf = document.get(term, 0)
            if tf:
                matched += 1
                total += self.idf(term) * tf * (K1 + 1) / (tf + norm)
        return matched, total
