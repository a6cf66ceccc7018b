"""Safety before relevance: what may not come first, from the operation's annotations.

An agent that takes the first result on trust must not be handed a deletion for "export
everything", nor a write for "what is stored under preferences.theme?". Relevance
cannot promise that: a removal and a read of the same resource share nearly every word.
So, after ranking, the first place goes to the best operation the request allows:

* an operation annotated ``destructiveHint: true`` only when the request asks to remove
  something, in any of the usual words for it (:data:`REMOVAL`, a general lexicon,
  stemmed like every term);
* an operation that is not ``readOnlyHint: true`` not when the request only asks a
  question: interrogative in form (:func:`asks_question`) and without a word that asks
  for a change (:data:`CHANGE`).

The annotations are the catalog's (codegen derives them from the HTTP method, a spec may
state them), never the operation's name. When no allowed operation matches at all, there
is no result: nothing is a sure match, and an empty answer sends the agent to list the
catalog instead of calling a write it did not ask for.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from memory_bank.capabilities.ranking.method_intent import METHOD_VERBS
from memory_bank.textsearch.tokenize import identifier_terms

__all__ = ["CHANGE", "REMOVAL", "Hazard", "Request", "asks_question", "asks_removal"]

#: Words that ask to remove something.
REMOVAL = frozenset(identifier_terms("remove delete forget erase wipe drop purge discard clear cancel revoke destroy"))
#: Words that ask for a change of any kind: removals and the verbs of the writing methods.
CHANGE = REMOVAL | frozenset(identifier_terms(*(METHOD_VERBS[m] for m in ("POST", "PUT", "PATCH", "DELETE"))))

#: A sentence that opens with a question word or an auxiliary verb ("what ...", "is
#: there ..."). Not a modal: "can you ...", "could you ..." are the polite form of an
#: order (an indirect request), whatever they end with.
_INTERROGATIVE = re.compile(
    r"(?:^|[.!?;])[\s\"'(]*(?:what|which|who|whom|whose|where|when|why|how|is|are|was|were|does|do|did|has|have|had)\b",
    re.IGNORECASE,
)


#: Words that ask for nothing: the topic a preposition opens and the content "that" opens,
#: up to the end of the clause ("the memory about deleting stale branches was useful", "do
#: you know anything about how we delete branches?", "remember that I always forget my
#: keys"), and a negated verb ("don't forget that", "never delete"). Read
#: broadly on purpose: a removal missed costs the deletion a place, a removal imagined
#: lets it come first.
_NOT_ASKED = re.compile(
    r"\b(?:about|on|regarding|concerning|of|that)\b[^,.;:!?]*?(?=[,.;:!?]|\b(?:and|then|but)\b|$)"
    r"|\b(?:not|never|(?:do|does|did|wo|ca|could|should|would)n['\u2019]?t|cannot)\s+[^\W\d_]+",
    re.IGNORECASE,
)


def asks_removal(terms: Iterable[str], request: str) -> bool:
    """Whether ``request`` (its stemmed ``terms`` given) asks to remove something: it uses a
    word of :data:`REMOVAL`, and not only as a topic or negated."""
    if not REMOVAL.intersection(terms):
        return False
    return bool(REMOVAL.intersection(identifier_terms(_NOT_ASKED.sub(" ", request))))


def asks_question(request: str) -> bool:
    """Whether ``request`` is phrased as a question (in form; what it asks for is not read)."""
    return _INTERROGATIVE.search(request.strip()) is not None


@dataclass(frozen=True)
class Hazard:
    """What an operation's annotations say it may do. Only a stated hint counts: a catalog
    without annotations says nothing, and nothing is barred for it."""

    destructive: bool
    writes: bool

    @classmethod
    def of(cls, capability: Mapping[str, Any]) -> Hazard:
        annotations = capability.get("annotations") or {}
        return cls(annotations.get("destructiveHint") is True, annotations.get("readOnlyHint") is False)


@dataclass(frozen=True)
class Request:
    """What a request allows first: a destructive operation only if it asks to remove
    something, a write only if it does more than ask a question."""

    removal: bool
    question: bool

    @classmethod
    def of(cls, terms: Iterable[str], text: str) -> Request:
        """The request of ``terms`` (its stemmed words) and ``text``."""
        words = set(terms)
        return cls(asks_removal(words, text), asks_question(text) and not words & CHANGE)

    @property
    def restricts(self) -> bool:
        """Whether any operation could be barred (a removal that is no question bars none)."""
        return self.question or not self.removal

    def allows(self, hazard: Hazard) -> bool:
        return not (hazard.destructive and not self.removal) and not (hazard.writes and self.question)
