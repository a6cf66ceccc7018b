"""Rank capabilities for a natural-language request (``search_capabilities``).

An agent describes what it wants ("is today a holiday in China?") and needs the one
operation, among hundreds from many APIs, that does it. Two lexical signals, both
built once at construction and answered from memory:

* the operation itself: BM25F over its fields (name, title, path, tags, description,
  arguments, response fields; weights and why in :mod:`fields`), the query's
  words plus its adjacent word pairs;
* its API: BM25 over one document per source pooling the titles, tags, descriptions
  and name of all its operations. A request about fruit then favours the fruit API
  even when the operation that answers it never says "fruit". It only re-weights
  operations that match on their own, so it cannot surface an operation with no
  evidence. Its share, ``API_WEIGHT``, is a quarter: a tie-breaker between APIs, never
  the main evidence.

First, a word of the request that is neither the catalog's nor English and is one edit from a
word of the catalog is read as that word (``textsearch.spelling``): "remmeber" as "remember";
every signal reads the corrected request but safety, which reads it as written.

Score = ``(1 - API_WEIGHT) * operation + API_WEIGHT * api``, both in [0, 1] (see
``textsearch.bm25`` for what 1 means), so the score is in [0, 1] and a caller may apply
a fixed ``min_score``. An operation with ``x-capability.examples`` mixes in how well the
request's words match its examples with the idf counted over all examples rather than over
operations (:mod:`example_requests`): in a small catalog every operation mentions every
action word somewhere, and only counted over requests is "delete" specific. A classifier
trained on the examples re-shapes that score (:mod:`example_intents`). A request
phrased as a question then mixes in a small share of how well each operation says it
answers questions (:mod:`question_fallback`), so a question that no operation names
reaches a question-answering one. A request that states several steps gets the operation of its
last step first when that operation is a close contender (:mod:`request_steps`). Last,
the first place goes to the best operation whose annotations the request allows: no
deletion unless it asks to remove something, no write for a question (:mod:`safety`).
A request that is exactly an operation's name, in any case, is a lookup of that
operation: it comes first, sure (score 1), whatever its words say to the ranker.

Every part is a field of :class:`Ranking`, so the evaluations switch each off on the
real index; each rule stays because it helps on at least two sources and hurts none,
weights are chosen by leave-one-source-out
(``docs/decisions/0013-capability-ranking-ablation.md``).

With an ``embedder`` (the ``semantic`` extra, :mod:`semantic`) the lexical score is
fused with embedding similarity, which finds operations that share no word with the
request; scores are then relative to the query's best, and a weak lexical best is
not stretched to full weight (``textsearch.fusion.fuse``).

Current figures: ``evals/RESULTS.md``.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memory_bank.capabilities.ranking import request_steps, safety
from memory_bank.capabilities.ranking.example_requests import EXAMPLE_WEIGHT, ExampleRequests
from memory_bank.capabilities.ranking.fields import FIELD_WEIGHTS, api_terms, fields, written_texts
from memory_bank.capabilities.ranking.question_fallback import ANSWER_TERMS, FALLBACK_WEIGHT, asks_question
from memory_bank.capabilities.ranking.semantic import INTENT_SEMANTIC_WEIGHT, SemanticIndex, TextVectors, capability_texts
from memory_bank.textsearch.bm25 import BM25F
from memory_bank.textsearch.embeddings import Embedder
from memory_bank.textsearch.fusion import LEXICAL_FLOOR, SEMANTIC_WEIGHT, fuse
from memory_bank.textsearch.spelling import Spelling
from memory_bank.textsearch.tokenize import identifier_terms, phrases

__all__ = ["API_WEIGHT", "CapabilitySearch", "Match", "Ranking"]

Capability = Mapping[str, Any]
#: A capability by its position in the index, and its score.
Ranked = tuple[int, float]

#: Share of the score that comes from the operation's API rather than the operation.
API_WEIGHT = 0.25
#: BM25's term-frequency saturation for operations: above Lucene's 1.2, so a request word
#: that several fields of an operation repeat (name, title, path, description) counts more
#: than one a single field mentions; and long fields normalised for their length more
#: than Lucene's 0.75 does, so a long description's incidental words count less.
#: Both chosen by leave-one-source-out (every fold agreed).
K1 = 3.0
B = 0.9


@dataclass(frozen=True)
class Ranking:
    """Which signals rank and at what weight; the default is the shipped ranker.

    One object instead of module constants, so an evaluation can switch any part off
    (``evals/capability_search.py --ablate``) or try another weight on a real index,
    and what is measured is the code that runs.
    """

    #: BM25F weight per field (:mod:`fields`); a field weighted 0 is not indexed.
    field_weights: Mapping[str, float] = field(default_factory=lambda: dict(FIELD_WEIGHTS))
    #: BM25 term-frequency saturation and length normalisation.
    k1: float = K1
    b: float = B
    #: Share of the score from the operation's API.
    api_weight: float = API_WEIGHT
    #: Share of the score, for an operation with examples, from :mod:`example_requests`.
    example_weight: float = EXAMPLE_WEIGHT
    #: Whether the request's adjacent word pairs are query terms.
    word_pairs: bool = True
    #: :mod:`question_fallback`'s weight; 0 switches it off.
    fallback_weight: float = FALLBACK_WEIGHT
    #: :mod:`request_steps`, :mod:`safety`.
    request_steps: bool = True
    safety: bool = True
    #: Whether the examples train a classifier that re-shapes their score (:mod:`example_intents`).
    example_intents: bool = True
    #: Whether that classifier reads ids and paths as their shapes (``example_intents.value_shapes``).
    value_shapes: bool = True
    #: Whether it reads the word a text opens with (``example_intents.opening_word``).
    opening_word: bool = True
    #: Whether the examples' embeddings train a classifier too (``semantic.SemanticIndex``).
    semantic_intents: bool = True
    #: Whether a request that is exactly an operation's name (``postMemory``) gets that operation first.
    exact_name: bool = True
    #: Whether a request's misspelt words are read as the catalog's (``textsearch.spelling``).
    spelling: bool = True


@dataclass(frozen=True)
class Match:
    """One ranked capability; ``score`` is in [0, 1], higher is better."""

    capability: Capability
    score: float


class CapabilitySearch:
    """An immutable in-memory index over a fixed list of capabilities."""

    def __init__(
        self,
        capabilities: Sequence[Capability],
        *,
        embedder: Embedder | None = None,
        vectors: TextVectors | None = None,
        semantic_weight: float | None = None,
        lexical_floor: float = LEXICAL_FLOOR,
        ranking: Ranking = Ranking(),
    ) -> None:
        """Index ``capabilities`` once, ranked as ``ranking`` says; ``embedder`` (see
        ``textsearch.embeddings.load_embedder``) adds the embedding signal, fused with
        ``semantic_weight`` and ``lexical_floor`` (see ``textsearch.fusion.fuse``; the defaults
        are the cross-validated ones, the weight ``semantic.INTENT_SEMANTIC_WEIGHT`` when the
        examples train the embedding's classifier); ``vectors`` shares the capability texts' rows with other
        indexes (``semantic.TextVectors``)."""
        self._capabilities = list(capabilities)
        self._ranking = ranking
        #: casefolded name -> position; of two operations one name names (two specs'), the first.
        self._by_name: dict[str, int] = {}
        for position, capability in enumerate(self._capabilities):
            self._by_name.setdefault(str(capability.get("name") or "").casefold(), position)
        self._operations = BM25F([fields(c) for c in self._capabilities], ranking.field_weights, k1=ranking.k1, b=ranking.b)
        sources: dict[str, int] = {}
        self._source_of = [sources.setdefault(str(c.get("source") or ""), len(sources)) for c in self._capabilities]
        pooled: list[list[str]] = [[] for _ in sources]
        for capability, source in zip(self._capabilities, self._source_of):
            pooled[source] += api_terms(capability)
        self._apis = BM25F([{"api": words} for words in pooled], {"api": 1.0}, k1=ranking.k1, b=ranking.b)
        self._examples = ExampleRequests(
            self._capabilities, intents=ranking.example_intents, shapes=ranking.value_shapes, opening=ranking.opening_word
        )
        self._hazards = [safety.Hazard.of(c) for c in self._capabilities]
        self._spelling = Spelling(text for c in self._capabilities for text in written_texts(c)) if ranking.spelling else None
        self._answers = self._operations.scores(ANSWER_TERMS)
        texts = [capability_texts(c) for c in self._capabilities]
        self._semantic = (
            SemanticIndex(embedder, texts, vectors=vectors, intents=ranking.semantic_intents) if embedder and texts else None
        )
        if semantic_weight is None:
            semantic_weight = INTENT_SEMANTIC_WEIGHT if self._semantic and self._semantic.classifies else SEMANTIC_WEIGHT
        self._fusion = (semantic_weight, lexical_floor)

    def __len__(self) -> int:
        return len(self._capabilities)

    def search(
        self,
        query: str,
        *,
        limit: int = 5,
        accept: Callable[[Capability], bool] | None = None,
    ) -> list[Match]:
        """The best ``limit`` capabilities for ``query``, best first (ties: catalog order).

        ``accept`` (e.g. a permission check) is applied before the limit, so a caller
        never gets fewer results just because better ones were filtered out. An empty
        query returns ``[]``: listing by category is the caller's job.
        """
        if limit <= 0:
            return []
        return self.rank(query, self.scores(query), limit=limit, accept=accept)

    def scores(self, query: str) -> list[float]:
        """Every capability's score for ``query``, in catalog order (all 0 for a query without words)."""
        ranking = self._ranking
        query = self.corrected(query)
        words = identifier_terms(query)
        if not words:
            return [0.0] * len(self._capabilities)
        query_terms = words + phrases(words) if ranking.word_pairs else words
        api = self._apis.scores(words)
        scores = [
            (1 - ranking.api_weight) * own + ranking.api_weight * api[source] if own > 0 else 0.0
            for own, source in zip(self._operations.scores(query_terms), self._source_of)
        ]
        examples = self._examples.scores(query) if ranking.example_weight > 0 else None
        if examples is not None:
            share = ranking.example_weight
            scores = [
                (1 - share) * own + share * example if has and own > 0 else own
                for own, example, has in zip(scores, examples, self._examples.has_examples)
            ]
        fallback = ranking.fallback_weight
        if fallback > 0 and asks_question(query):
            scores = [(1 - fallback) * own + fallback * answers for own, answers in zip(scores, self._answers)]
        if self._semantic is not None:
            scores = fuse(scores, self._semantic.scores(query), *self._fusion)
        return scores

    def corrected(self, query: str) -> str:
        """``query`` with its misspelt words read as the catalog's (``textsearch.spelling``)."""
        return self._spelling.correct(query) if self._spelling is not None else query

    def rank(
        self, query: str, scores: Sequence[float], *, limit: int = 5, accept: Callable[[Capability], bool] | None = None
    ) -> list[Match]:
        """:meth:`search` from ``scores`` (:meth:`scores` of ``query``): so one request's scores
        can be ranked for several ``accept``s, its embedding computed once."""
        ranking = self._ranking
        named = self._by_name.get(query.strip().casefold()) if ranking.exact_name else None
        ranked = self._best(scores, max(limit, request_steps.WINDOW), accept)
        tail = request_steps.last_step(self.corrected(query)) if ranking.request_steps else None
        if tail:
            ranked = self._last_step_first(ranked, tail)
        # Safety reads the request as written: a correction may make a removal word of another
        # language's word or a name ("crear" -> "clear", "Forgey" -> "forget"), and a deletion
        # comes first only for a request that plainly asks for one.
        request = safety.Request.of(query) if ranking.safety and ranked else None
        if request and request.restricts and not request.allows(self._hazards[ranked[0][0]]):
            ranked = self._allowed_first(ranked, scores, request, accept)
        if named is not None and (accept is None or accept(self._capabilities[named])):
            ranked = [(named, 1.0), *((doc_id, score) for doc_id, score in ranked if doc_id != named)]
        return [Match(self._capabilities[doc_id], min(1.0, score)) for doc_id, score in ranked[:limit]]

    def _allowed_first(
        self, ranked: list[Ranked], scores: Sequence[float], request: safety.Request, accept: Callable[[Capability], bool] | None
    ) -> list[Ranked]:
        """``ranked`` led by the best operation ``request`` allows first (see :mod:`safety`),
        with its own score; those it passes keep their order, their scores capped at its
        score so the list stays in order. Empty when the request allows none that matches."""
        allowed = next((i for i, (doc_id, _) in enumerate(ranked) if request.allows(self._hazards[doc_id])), None)
        if allowed is not None:
            doc_id, top = ranked[allowed]
            rest = [*ranked[:allowed], *ranked[allowed + 1 :]]
        else:
            seen = {doc_id for doc_id, _ in ranked}
            candidates = [(-s, d) for d, s in enumerate(scores) if s > 0 and d not in seen and request.allows(self._hazards[d])]
            heapq.heapify(candidates)
            found = self._first_accepted(candidates, accept)
            if found is None:
                return []
            (doc_id, top), rest = found, ranked
        return [(doc_id, top), *((other, min(score, top)) for other, score in rest)]

    def _last_step_first(self, ranked: list[Ranked], tail: str) -> list[Ranked]:
        """``ranked`` with the best operation for the request's last step ``tail`` moved to
        the front when it is a contender (see :mod:`request_steps`)."""
        words = identifier_terms(tail)
        fit = self._operations.scores(words + phrases(words))
        best = max(fit, default=0.0)
        if not ranked or best <= 0:
            return ranked
        first, top = ranked[0]
        for position, (doc_id, score) in enumerate(ranked[1 : request_steps.WINDOW], start=1):
            same_api = self._source_of[doc_id] == self._source_of[first]
            if fit[doc_id] == best and same_api and score >= request_steps.NEAR * top:
                return [(doc_id, top), *ranked[:position], *ranked[position + 1 :]]
        return ranked

    def _best(self, scores: Sequence[float], limit: int, accept: Callable[[Capability], bool] | None) -> list[Ranked]:
        """The ``limit`` best accepted capabilities as ``(doc_id, score)``, ties in catalog order.

        A heap, not a sort: only the first few entries are ever popped.
        """
        heap = [(-score, doc_id) for doc_id, score in enumerate(scores) if score > 0]
        heapq.heapify(heap)
        ranked: list[Ranked] = []
        while len(ranked) < limit and (found := self._first_accepted(heap, accept)) is not None:
            ranked.append(found)
        return ranked

    def _first_accepted(self, heap: list[tuple[float, int]], accept: Callable[[Capability], bool] | None) -> Ranked | None:
        """Pop ``heap`` (a heap of ``(-score, doc_id)``) down to its best accepted entry."""
        while heap:
            negative, doc_id = heapq.heappop(heap)
            if accept is None or accept(self._capabilities[doc_id]):
                return doc_id, -negative
        return None
