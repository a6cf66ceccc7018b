"""How sure a search's first result is: the number an agent acts on before it calls.

The first score alone is a poor guide: the lexical score is the share of the request an
operation covers, and the hybrid's is relative to the query's best, so a request whose few
words several operations share looks as sure as one that names an operation. What tells a
sure match from a guess better is the first result's lead: a first result far ahead of the
second is picked, one level with it is a coin toss. So the confidence is the first score
raised by its lead, ``(first + w * (first - second)) / (1 + w)``, in [0, 1] like the
scores, and equal to the first score when nothing else matched. A short request whose one
word only one operation has still looks sure ("help" meets "helpful"): words cannot tell.

``w`` and the threshold an agent is told (under it, compare several cards) are chosen per
ranker by leave-one-source-out (``evals/capability_scores.py``,
``docs/decisions/0054-confidence-from-the-lead.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["HYBRID", "LEXICAL", "Confidence"]


@dataclass(frozen=True)
class Confidence:
    """How one ranker's first result is judged."""

    #: How much the first result's lead over the second counts beside its score.
    lead_weight: float
    #: The confidence under which a first result is too often wrong to act on alone.
    threshold: float

    def of(self, scores: Sequence[float]) -> float | None:
        """The confidence in the first of ``scores`` (best first); None when there is none."""
        if not scores:
            return None
        first = scores[0]
        lead = first - (scores[1] if len(scores) > 1 else 0.0)
        return round((first + self.lead_weight * lead) / (1 + self.lead_weight), 4)


LEXICAL = Confidence(lead_weight=8.0, threshold=0.07)
HYBRID = Confidence(lead_weight=2.0, threshold=0.52)
