"""Where a question goes when no operation names what it asks about.

"How many moons does Jupiter have?" shares no word with any operation of a registry,
yet one of them may be the right tool: a question-answering operation ("get a short
answer to your question", a knowledge engine, an FAQ search) answers exactly the
requests that no specific operation covers. What connects the two is the form of the
request - it is a question, so it wants an answer - and words cannot show that.

So a request phrased as a question (:func:`asks_question`) gives every operation a
small share of how well it matches "question answer" (:data:`ANSWER_TERMS`, scored by
the same BM25F as the request, once per index since it does not depend on the
request). The share, :data:`FALLBACK_WEIGHT`, is small enough that any operation
with real evidence in the request still ranks above it: it orders what would
otherwise be noise (a stray shared word) or nothing.

Only questions get it: applied to every request, it would pull requests away from their
operations in specs that have no question-answering operation at all. Measurements:
``docs/decisions/0002-capability-ranking-signals.md``.
"""

from __future__ import annotations

import re

from memory_bank.textsearch.tokenize import identifier_terms

__all__ = ["ANSWER_TERMS", "FALLBACK_WEIGHT", "asks_question"]

#: What a question-answering operation says about itself.
ANSWER_TERMS = tuple(identifier_terms("question answer"))

#: Share of a question's score that comes from :data:`ANSWER_TERMS`.
FALLBACK_WEIGHT = 0.03

#: A question mark or an interrogative word: the request asks rather than orders.
_QUESTION = re.compile(r"\?|\b(?:what|when|who|whom|whose|where|which|how|why)\b", re.IGNORECASE)


def asks_question(request: str) -> bool:
    """Whether ``request`` is phrased as a question."""
    return _QUESTION.search(request) is not None
