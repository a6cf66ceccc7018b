"""Okapi BM25 and, on top of it, BM25F: one K1, one B, one idf for both searches.

Memory search scores candidates with :class:`Corpus` (plain BM25 over one text per row,
statistics supplied by the caller); capability search builds a :class:`BM25F` index over
operations made of weighted fields. Both use Lucene's defaults and Lucene's idf.

BM25F (Robertson, Zaragoza & Taylor 2004, "Simple BM25 extension to multiple weighted
fields"): a word in an operation's name says more about what it does than the same word
deep in its description, so fields are weighted before term frequencies saturate:
``tf~(t, d) = sum_f w_f * tf_f(t, d) / (1 - b + b * len_f(d) / avglen_f)``,
``score(q, d) = sum_{t in q} idf(t) * tf~ / (k1 + tf~)``.

Nothing in ``idf(t) * tf~ / (k1 + tf~)`` depends on the query, so that product (the
term's "impact" on the document) is computed once at construction and stored in the
postings: a query just adds up floats.

Normalisation of BM25F: ``tf~ / (k1 + tf~)`` is below 1, so a score is below ``sum
idf(t)`` over the query's terms, a word no document has counting at the highest idf.
The score divided by that ceiling is in [0, 1] and means "how much of the query this
document covers, and how strongly" regardless of what else is indexed.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["B", "BM25F", "K1", "Corpus", "idf"]

#: Term-frequency saturation and length normalisation: the usual BM25 values.
K1 = 1.2
B = 0.75


def idf(documents: int, df: int) -> float:
    """Lucene's BM25 idf, floored at 0 by the ``1 +``: positive even for a term in every
    document, so common words never subtract."""
    return math.log(1 + (documents - df + 0.5) / (df + 0.5))


@dataclass(frozen=True)
class Corpus:
    """What BM25 needs to know about the searched documents: how many, how long, and each
    term's document count."""

    documents: int
    mean_length: float
    frequency: Mapping[str, int]

    def idf(self, term: str) -> float:
        return idf(self.documents, self.frequency.get(term, 0))

    def relevance(self, words: Sequence[str], length: int, terms: frozenset[str]) -> tuple[int, float]:
        """(how many of the distinct ``terms`` occur in a document, its BM25 score); the
        document is given as its ``words`` and its ``length`` (in any unit the caller's
        ``mean_length`` uses: BM25 only ever uses a length relative to the mean)."""
        present = terms.intersection(words)  # usually none or one or two: count only those
        if not present:
            return 0, 0.0
        norm = K1 * (1 - B + B * length / max(self.mean_length, 1.0))
        total = 0.0
        for term in present:
            tf = words.count(term)
            total += self.idf(term) * tf * (K1 + 1) / (tf + norm)
        return len(present), total


class BM25F:
    """An immutable in-memory BM25F index over documents given as ``{field: [term, ...]}``."""

    def __init__(
        self,
        documents: Sequence[Mapping[str, Sequence[str]]],
        weights: Mapping[str, float],
        *,
        k1: float = K1,
        b: float = B,
        collection: tuple[int, Mapping[str, int]] | None = None,
    ) -> None:
        """Index ``documents``; a field not in ``weights`` (or weighted 0) is not indexed.

        ``collection``, ``(size, document frequency per term)``, takes the idf from another
        collection than ``documents`` (a finer one: the requests an operation's examples
        are, where the documents are operations)."""
        self._n = len(documents)
        weights = {field: weight for field, weight in weights.items() if weight > 0}
        avg = {
            field: (sum(len(d.get(field, ())) for d in documents) / self._n) if self._n else 0.0 for field in weights
        }
        postings: dict[str, list[tuple[int, float]]] = {}
        for doc_id, doc in enumerate(documents):
            pseudo_tf: dict[str, float] = defaultdict(float)
            for field, weight in weights.items():
                words = doc.get(field, ())
                if not words:
                    continue
                norm = 1 - b + b * len(words) / avg[field]
                for term, tf in Counter(words).items():
                    pseudo_tf[term] += weight * tf / norm
            for term, weighted in pseudo_tf.items():
                postings.setdefault(term, []).append((doc_id, weighted / (k1 + weighted)))
        size, frequency = collection or (self._n, {t: len(p) for t, p in postings.items()})
        self._idf = {t: idf(size, frequency.get(t, 0)) for t in postings}
        #: term -> (doc ids, impacts): two flat tuples iterate faster than pairs.
        self._postings = {
            t: (tuple(d for d, _ in p), tuple(self._idf[t] * s for _, s in p)) for t, p in postings.items()
        }
        self._unseen_idf = idf(size, 0)

    def __len__(self) -> int:
        return self._n

    def scores(self, query_terms: Iterable[str]) -> list[float]:
        """The score in [0, 1] of every document, by position (0.0: shares no term with the query).

        A term the query repeats counts once per mention, as in Lucene: "fruits from the
        Sapindales order ... fruits belonging to this order" is about the order more than
        about the "families" it names once.

        Dense on purpose: adding into a list by index is the cheapest accumulator in
        pure Python, and callers fuse more signals position by position.
        """
        mentions = Counter(query_terms)
        ceiling = sum(n * self._idf.get(t, self._unseen_idf) for t, n in mentions.items())
        scores = [0.0] * self._n
        for term, n in mentions.items():
            doc_ids, impacts = self._postings.get(term, ((), ()))
            for doc_id, impact in zip(doc_ids, impacts):
                scores[doc_id] += n * impact
        return [score / ceiling for score in scores] if ceiling > 0 else scores
