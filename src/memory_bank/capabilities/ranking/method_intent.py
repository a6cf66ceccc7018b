"""A request's verbs say which kind of operation it wants.

"Fetch my user profile to show me my details" wants a read: of ``GET /getUserProfile``
and ``PUT /updateUserProfile``, which share every noun of the request, only the first
does that. Words cannot show it: in a catalog where most operations are reads,
"fetch" and "show" are in most documents, so their idf, and with it their weight, is
near zero.

So the method is a filter of its own. The request's *intent* is the set of
methods whose verbs (:data:`METHOD_VERBS`) it uses, or a read when it
asks for a fact ("what ...", "when ...") and names no action; an operation that
performs none of them keeps ``1 - MISMATCH_WEIGHT`` of its score. A request with no
such verb, or with verbs of several methods ("find the report and delete it"),
leaves operations of those methods alone. An operation performs its HTTP method and
any method whose verbs its name uses, so RPC-style APIs that read with
``POST /getThing`` are not taken for writers.

Measurements: ``docs/decisions/0013-capability-ranking-ablation.md``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from memory_bank.textsearch.tokenize import identifier_terms

__all__ = ["METHOD_VERBS", "MISMATCH_WEIGHT", "actions", "intent"]

#: What each HTTP method does, in request words (RFC 9110 section 9.3). Only words that
#: name one kind of method: not "set", "save" or "new", which vendors use for creations
#: and for updates alike (one public API saves to a library with PUT).
METHOD_VERBS: Mapping[str, str] = {
    "GET": "get retrieve fetch list show find read",
    "HEAD": "check exists",
    "POST": "create add submit send make",
    "PUT": "update replace",
    "PATCH": "update modify change edit",
    "DELETE": "delete remove cancel",
}

#: Share of its score an operation loses when it performs none of the request's methods.
MISMATCH_WEIGHT = 0.2

_VERBS: Mapping[str, frozenset[str]] = {method: frozenset(identifier_terms(words)) for method, words in METHOD_VERBS.items()}
#: Method words that a request uses as often for something other than the action it asks
#: for: "make sure", "send me the forecast", "how the rate has changed". They still say
#: what an operation's name does, but state no intent (a guard for requests not measured
#: here).
_NOT_STATED = frozenset(identifier_terms("make send change"))
_STATED: Mapping[str, frozenset[str]] = {method: verbs - _NOT_STATED for method, verbs in _VERBS.items()}
#: Question words that ask for a fact. Not "how" or "why": "how do I create ..." asks how
#: to act. The rule puts our own "what is the value of preferences.theme" on
#: ``getMemoryKeypath`` instead of ``putMemoryKeypath``.
_ASKS_FOR_INFORMATION = re.compile(r"\b(?:what|which|who|whom|whose|where|when)\b", re.IGNORECASE)
_READ = frozenset({"GET", "HEAD"})


def actions(capability: Mapping[str, Any]) -> frozenset[str]:
    """The methods an operation performs: its HTTP method, and those whose verbs its name uses.

    A reader also answers HEAD (RFC 9110 section 9.3.2: HEAD is GET without the body), so
    "check" ("check the population of Tokyo") does not rule out every read but the ones
    named ``check...``.
    """
    name = set(identifier_terms(str(capability.get("name") or "")))
    performed = {str(capability.get("method") or "").upper()} | {m for m, verbs in _VERBS.items() if verbs & name}
    return frozenset(performed | {"HEAD"} if "GET" in performed else performed)


def intent(request_terms: Iterable[str], request: str) -> frozenset[str]:
    """The methods whose verbs the request uses (its ``request_terms``, which the caller has
    already); a read for a question that asks for information and names no action ("what
    is the value of preferences.theme?"); else empty."""
    words = set(request_terms)
    stated = frozenset(m for m, verbs in _STATED.items() if verbs & words)
    return stated or (_READ if _ASKS_FOR_INFORMATION.search(request) else stated)
