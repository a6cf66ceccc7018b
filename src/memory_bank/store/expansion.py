"""Pseudo-relevance feedback: the words the best matches share re-rank their band.

A question and the memory that answers it often share only the name and one word
("What did Caroline research?" / "Caroline: ... adoption agencies"); the memories that
rank first for it tend to be about the same thing and share its other words
("adoption", "agency"). So after a first ranking, the ``TERMS`` terms that weigh most
in the best ``FEEDBACK_DOCS`` matches (RM3-style: share of each document's terms, times
IDF over the searched rows) are added to the query with weight ``WEIGHT``. Only when
there are more matches than that: feedback drawn from every match would re-rank them
by their own words.

They only add to BM25 inside a coordination band (``store.search``): a memory still
needs the query's own terms to enter the ranking and ranks by how many it has, so
feedback reorders near equals and never lets a memory that matches only expansion
terms in. That keeps the first-pass precision (MRR) and buys recall.

Parameters by leave-one-conversation-out on the LoCoMo dev set (``evals/memory_search.py``,
SQLite) over weights {0, 0.1, 0.2, 0.4} x feedback documents {3, 5, 10} x expansion terms
shared by at least {1, 2} of them (10 terms, Anserini's RM3 default), scored by
recall@10 + MRR: two folds chose 0.4 / 5 / 1, one 0.2 / 3 / 1; held out, recall@10
0.666 -> 0.691 and MRR 0.517 -> 0.512. On all three conversations 0.4 / 5 gives
0.690 / 0.521.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from memory_bank.store import bm25

FEEDBACK_DOCS = 5
TERMS = 10
WEIGHT = 0.4

Frequency = Callable[[Sequence[str]], Mapping[str, int]]


def expand(
    best: Sequence[Sequence[str]], query: Sequence[str], corpus: bm25.Corpus, frequency: Frequency
) -> tuple[list[str], bm25.Corpus]:
    """The expansion terms drawn from the ``best`` matches (all the matches, best first, each
    as the terms of its ``search_text``), and ``corpus`` with their document counts added
    (``frequency`` counts terms over the searched rows). None when there are too few matches."""
    if len(best) <= FEEDBACK_DOCS:
        return [], corpus
    documents = [words for words in best[:FEEDBACK_DOCS] if words]
    pool = sorted({term for words in documents for term in words} - set(query))
    if not pool:
        return [], corpus
    counts = bm25.Corpus(corpus.documents, corpus.mean_length, frequency(pool))
    weight = {t: counts.idf(t) * sum(words.count(t) / len(words) for words in documents) for t in pool}
    chosen = sorted(pool, key=lambda t: (-weight[t], t))[:TERMS]
    return chosen, bm25.Corpus(corpus.documents, corpus.mean_length, {**corpus.frequency, **{t: counts.frequency[t] for t in chosen}})
