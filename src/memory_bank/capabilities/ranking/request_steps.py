"""A request that states several steps wants the operation of its last step first.

"Verify this address and then standardize it", "Get the exchange rate. Also, set an
alert if it drops": people state steps in the order they are to happen, and what they
ask for in the end is the last one; the earlier ones are means to it. A bag of words
cannot see the order, so the operation of the first step, often the one with more of
the request's words, tends to rank first.

When a request has a step connective (:data:`STEP`), the text after the last one is
its last step. The operation that best matches that text alone (BM25F, as the whole
request) moves to the front when it is already a contender for the whole request:
among the first :data:`WINDOW` results, of the same API as the first (the steps of one
request are calls to one API), and scoring at least :data:`NEAR` of it. It takes the
first's score, so scores stay in order. Otherwise nothing changes: a last step whose
best operation the whole request does not support (say, a word it shares with an
unrelated operation) is no evidence, and an operation of another API is a different
reading of the request, not its next step.

A step is its action, not its condition: "also, set an alert if the EUR/GBP rate goes
above 0.9" is about alerts, yet its condition names the rate, which the rate operation
fits better. So a condition clause (:data:`CONDITION`, before a comma or at the end)
is cut from the last step, and a later sentence that opens with one ("... check its
score? If it is normal, report it") starts a step of its own. "when" and "once" are not
condition words: they also ask ("tell me when the next one is") and count ("once a
week"), where a cut would drop the step's object.

Measurements: ``docs/decisions/0002-capability-ranking-signals.md``.
"""

from __future__ import annotations

import re

__all__ = ["CONDITION", "NEAR", "STEP", "WINDOW", "last_step"]

#: Words that start a further step of a request, and a condition opening a later sentence
#: (up to its comma: the step is what follows).
STEP = re.compile(
    r"\b(?:also|then|additionally|afterwards|after that|finally)\b|(?<=[.?!]\s)if\b[^,.?!]*,", re.IGNORECASE
)
#: Words that open a condition clause: it says when a step happens, not what it does.
CONDITION = re.compile(r"\b(?:if|unless|whenever|in case)\b", re.IGNORECASE)
#: How far down the ranking the last step's operation may be to move to the front.
WINDOW = 3
#: Share of the first result's score it must have, at least.
NEAR = 0.5


def last_step(request: str) -> str | None:
    """The action after the request's last step connective; None for a one-step request."""
    steps = list(STEP.finditer(request))
    tail = request[steps[-1].end() :].lstrip(" ,;:").strip() if steps else ""
    return _action(tail) or None


def _action(step: str) -> str:
    """``step`` without its condition clause: "if the rate drops, set an alert" and "set an
    alert if the rate drops" are both "set an alert"."""
    if CONDITION.match(step) and "," in step:
        step = step.split(",", 1)[1].strip()
    condition = CONDITION.search(step)
    before = step[: condition.start()].strip(" ,;:") if condition else ""
    return before or step
