"""Quoted text in a request is a value to pass, not words about the operation.

"Give him 'View' permissions on our 'Sales Analytics Q2 Updated' dashboard" asks to
manage permissions; "Updated" is part of the dashboard's name. Read as prose, the
quote made a verb of the request ("update", an intent: :mod:`method_intent`) and a
phrase with the word after it ("updated dashboard"), and ``PUT /updateDashboard``
ranked first. A quoted span is a literal: a name, an id, a title, a message.

So a request is split into its prose and its literals (:func:`split`). Both give
terms, so a literal that is also the operation's word ("jokes in the 'music'
category", an agent quoting ``"postMemory"``) still counts; but only the prose states
the action (method intent, the question form, step words), and word pairs never
straddle a quote. A quote longer than :data:`MAX_WORDS` is not a value but quoted
prose (some requests arrive wrapped in quotes whole), and stays prose.

Measurements: ``docs/decisions/0002-capability-ranking-signals.md``.
"""

from __future__ import annotations

import re

__all__ = ["MAX_WORDS", "split"]

#: A span in double, curly or single quotes (a single quote not inside a word: "it's").
_QUOTED = re.compile(r"\"[^\"\n]+\"|“[^”\n]+”|‘[^’\n]+’|(?<!\w)'[^'\n]+'(?!\w)")

#: Quotes of more words than this are quoted prose, not a literal value.
MAX_WORDS = 10


def split(request: str) -> tuple[list[str], list[str]]:
    """``(prose, literals)``: the request's text between its quoted literals, in order, and
    the literals without their quotes."""
    prose, literals, start = [], [], 0
    for quote in _QUOTED.finditer(request):
        if len(quote.group().split()) <= MAX_WORDS:
            prose.append(request[start : quote.start()])
            literals.append(quote.group()[1:-1])
            start = quote.end()
    return [*prose, request[start:]], literals
