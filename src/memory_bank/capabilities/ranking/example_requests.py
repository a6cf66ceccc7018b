"""How specific a request's words are among requests: the examples as a collection of their own.

In :mod:`fields` an operation's examples are one field, and a word's idf is counted over
operations. In a small catalog whose operations all talk about the same resource, the words
that name the action ("delete", "set", "remember") then turn up in nearly every operation
(one example of the history read says "deleted", one of the search says "remember"), so
their idf is near 0, and a content word that one description happens to use ("editor")
outweighs them: "delete mem_01J..." went to the read, "set user.preferences.editor to
neovim" to the keypath read.

The examples are requests, so this signal counts over requests: a word's idf is taken over
all examples of the catalog (a word one example in ten uses is specific, however many
operations have that one example), and its frequency in an operation is how many of the
operation's examples use it. That is BM25 over operations with the idf of the finer
collection (``BM25F(collection=...)``), Lucene's k1 and b. In requests a word in "-ed"
states what is ("what's saved on the trip?", "when was it deleted?") where the bare verb
orders it ("save ...", "delete ..."), so here the two stay apart
(``identifier_terms(participles=True)``); in an operation's own text, where both describe
what it does, they are one word. An operation's score mixes in
``EXAMPLE_WEIGHT`` of it (``search.Ranking.example_weight``); an operation without examples
keeps its score, so a vendor spec without them ranks as before. Where operations have examples, a
classifier trained on them re-shapes this score (:class:`example_intents.TextIntents`).

Measurements and the choice of the weight: ``docs/decisions/0031-example-requests-as-a-collection.md``,
``docs/decisions/0039-more-examples-by-blind-authors.md``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from memory_bank.capabilities.ranking.example_intents import TextIntents
from memory_bank.textsearch.bm25 import BM25F
from memory_bank.textsearch.tokenize import identifier_terms

__all__ = ["EXAMPLE_WEIGHT", "ExampleRequests"]

#: Share of an operation's score that comes from this signal, when it has examples.
EXAMPLE_WEIGHT = 0.75


def _terms(example: str) -> frozenset[str]:
    """An example's words, each once: the example counts as using a word or not."""
    return frozenset(identifier_terms(example, participles=True))


class ExampleRequests:
    """The examples of a catalog's operations, indexed per operation with the idf of examples."""

    def __init__(
        self, capabilities: Sequence[Mapping[str, Any]], *, intents: bool = True, shapes: bool = True, opening: bool = True
    ) -> None:
        """``intents``: whether the examples also train :class:`TextIntents`; ``shapes``: whether it
        reads ids and paths as their shapes; ``opening``: whether it reads a text's opening word."""
        # An example without a word ("", "!!!", an emoji) says nothing: it is not one, neither in
        # the count of requests nor for the classifier, and its operation ranks as one without.
        worded = [
            [(e, terms) for e in capability.get("examples") or () if isinstance(e, str) and (terms := _terms(e))]
            for capability in capabilities
        ]
        per_operation = [[terms for _, terms in examples] for examples in worded]
        self.has_examples = [bool(examples) for examples in per_operation]
        frequency = Counter(term for examples in per_operation for example in examples for term in example)
        documents = [{"examples": [term for example in examples for term in sorted(example)]} for examples in per_operation]
        size = sum(len(examples) for examples in per_operation)
        self._index = BM25F(documents, {"examples": 1.0}, collection=(size, frequency)) if size else None
        texts = [[text for text, _ in examples] for examples in worded]
        self._intents = TextIntents.fit(capabilities, texts, shapes=shapes, opening=opening) if intents else None

    def scores(self, request: str) -> list[float] | None:
        """Per operation, the score in [0, 1] of ``request``; None without examples."""
        if self._index is None:
            return None
        scores = self._index.scores(identifier_terms(request, participles=True))
        return self._intents.reshape(scores, request) if self._intents is not None else scores
