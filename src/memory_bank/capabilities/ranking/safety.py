"""Safety before relevance: what may not come first, from the operation's annotations.

An agent that takes the first result on trust must not be handed a deletion for "export
everything", nor a write for "what is stored under preferences.theme?". Relevance
cannot promise that: a removal and a read of the same resource share nearly every word.
So, after ranking, the first place goes to the best operation the request allows:

* an operation annotated ``destructiveHint: true`` only when the request orders a removal:
  a removal verb of :data:`REMOVAL` in its base form, used as a verb (:func:`asked_verbs`);
* an operation that is not ``readOnlyHint: true`` not when the request only asks a
  question: interrogative in form (an opening question word or a closing question mark,
  :func:`asks_question`) and ordering no change (no verb of :data:`CHANGE` asked).

A verb is asked only where the request speaks for itself: not inside quotes, not in the
content a colon, "that", a topic ("about", "on", "of", ...) or a question word inside a
sentence opens ("did I note how to delete ..."), nor in a clause a negation or a condition
opens ("don't forget that", "unless I say delete"); not as part of an identifier
(``deleteMemory``, ``ui.delete_label``), and not after an article or a form of "be" ("the
sky was clear"). "Deleted", "deleting" and "deletion" state or name; they do not
order. Read broadly on purpose: a removal missed costs the deletion a place, a removal
imagined lets it come first.

The annotations are the catalog's (codegen derives them from the HTTP method, a spec may
state them), never the operation's name. When no allowed operation matches at all, there
is no result: nothing is a sure match, and an empty answer sends the agent to list the
catalog instead of calling a write it did not ask for.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["CHANGE", "REMOVAL", "Hazard", "Request", "asked_verbs", "asks_question"]

#: Verbs that order a removal, in their base form; "rid" for the phrasal "get rid of".
REMOVAL = frozenset("remove delete forget erase wipe drop purge discard clear cancel revoke destroy rid".split())
#: Verbs that order a change of any kind: removals and what the writing methods do, in request
#: words (RFC 9110 section 9.3: POST, PUT, PATCH).
CHANGE = REMOVAL | frozenset("create add submit send make update replace modify change edit".split())

#: A sentence that opens with a question word or an auxiliary verb ("what ...", "is
#: there ..."). Not a modal: "can you ...", "could you ..." are the polite form of an
#: order (an indirect request), whatever they end with.
_INTERROGATIVE = re.compile(
    r"(?:^|[.!?;])[\s\"'(]*(?:what|which|who|whom|whose|where|when|why|how|is|are|was|were|does|do|did|has|have|had)\b",
    re.IGNORECASE,
)


#: Spans that are quoted: their words are content, not orders.
_QUOTED = re.compile(r"\"[^\"]*\"|`[^`]*`|\u201c[^\u201d]*\u201d|\u2018[^\u2019]*\u2019|(?<![^\W_])'[^']*'(?![^\W_])")
#: What ends a clause: its punctuation, en and em dashes among it (a spaced hyphen too, below).
_CLAUSE_END = ",.;!?\u2013\u2014"
#: Spans that order nothing, each to the end of its clause (a dash ends one too): the content
#: a colon, "that", a topic or an embedded question ("... how to delete") opens, and a clause
#: a negation or a condition opens.
_NOT_ASKED = re.compile(
    r"(?::|(?<=\w\s)\b(?:how|whether|what|when|where|which|who|why)\b|\b(?:about|on|regarding|concerning|of|that|unless|if|before|after|lest|until|while|because|not|never|no|cannot|\w+n['\u2019`]?t|(?:do|does|did|is|are|was|were|ca|wo)\s+n['\u2019`]?t)\b)"
    rf"[^{_CLAUSE_END}]*?(?=[{_CLAUSE_END}]|\s-+\s|\b(?:and|then|but)\b|$)",
    re.IGNORECASE,
)
#: Words after which a removal word is an adjective ("was clear", "very clear").
_NOT_A_VERB = frozenset("is are was were be been being very so too more most quite".split())
#: Format characters (zero-width spaces and joiners, bidi marks) that split or hide words.
_FORMAT = re.compile(r"[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")
#: A polite order phrased as a question ("can you delete ...?", "... could you set that
#: up?"): a closing question mark after one is no question.
_POLITE = re.compile(r"\b(?:can|could|would|will)\s+(?:you|u|we)\b|\bplease\b", re.IGNORECASE)


def asked_verbs(request: str) -> set[str]:
    """The lower-cased words of ``request`` that it uses as verbs of its own order (see the
    module's docstring): outside quotes and content, standalone, not after an article."""
    text = _NOT_ASKED.sub(" ", _QUOTED.sub(" ", _FORMAT.sub("", request)))
    words = re.findall(r"[\w.\-/]+", text)
    return {
        _base(word.lower())
        for before, word in zip(["", *words], words)
        if word.isalpha() and (word.islower() or word.isupper() or word.istitle()) and before.lower() not in _NOT_A_VERB
    }


def _base(word: str) -> str:
    """A verb of :data:`CHANGE` without its third-person "-s" ("deletes", "erases" ->
    "delete", "erase"); any other word as it is."""
    for end in ("s", "es"):
        if word.endswith(end) and word[: -len(end)] in CHANGE:
            return word[: -len(end)]
    return word


def asks_question(request: str) -> bool:
    """Whether ``request`` is phrased as a question (in form; what it asks for is not read): an
    opening question word or auxiliary, or a closing question mark that no polite order
    ("can you ...?") explains."""
    return _INTERROGATIVE.search(request.strip()) is not None or (
        request.rstrip().endswith("?") and not _POLITE.search(request)
    )


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
    def of(cls, text: str) -> Request:
        """What the request ``text`` allows first."""
        verbs = asked_verbs(text)
        return cls(bool(verbs & REMOVAL), asks_question(text) and not verbs & CHANGE)

    @property
    def restricts(self) -> bool:
        """Whether any operation could be barred (a removal that is no question bars none)."""
        return self.question or not self.removal

    def allows(self, hazard: Hazard) -> bool:
        return not (hazard.destructive and not self.removal) and not (hazard.writes and self.question)
