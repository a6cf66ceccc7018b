"""Feedback moves a memory's score, a bounded step at a time.

``postMemoryFeedback`` records what a reader thought of one memory version. Search
turns the feedback of the memory's own organisation into a net vote, each
``helpful`` +1, ``not_helpful`` -1, ``outdated`` and ``incorrect`` -2 (a stale or
false memory is worse than an unhelpful one), squashed by ``tanh(net / 2)`` into
(-1, 1) so that one vote counts and a hundred cannot count a hundred times. Then:

* a positive vote ``v`` moves the score ``RAISE * v`` of the way towards 1;
* a negative vote ``v`` takes ``LOWER * |v|`` of the score away.

The score stays in [0, 1] and in order among memories without feedback; the best a
memory can do is close a quarter of its gap to 1, the worst is to lose half its score,
so feedback reorders near neighbours but never buries a strong match under a weak
one. Feedback is per version: a patch writes a new version that starts clean, since
the feedback was about the old words. The constants are set a priori (no feedback
data to fit them on).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import sqlalchemy as sa
from sqlmodel import Session, col

from memory_bank.store.tables import FeedbackRow, MemoryRow

VOTES = {"helpful": 1.0, "not_helpful": -1.0, "outdated": -2.0, "incorrect": -2.0}
RAISE = 0.25
LOWER = 0.5


def net_votes(session: Session, pks: Sequence[int]) -> dict[int, float]:
    """pk -> the summed votes of its organisation's feedback, for the memories that have any."""
    if not pks:
        return {}
    statement = (
        sa.select(col(MemoryRow.pk), col(FeedbackRow.feedback), sa.func.count())
        .join(FeedbackRow, col(FeedbackRow.memory_id) == col(MemoryRow.id))
        .where(col(MemoryRow.pk).in_(pks), col(FeedbackRow.org_id) == col(MemoryRow.org_id))
        .group_by(col(MemoryRow.pk), col(FeedbackRow.feedback))
    )
    votes: dict[int, float] = {}
    for pk, kind, count in session.execute(statement):
        votes[pk] = votes.get(pk, 0.0) + VOTES.get(kind, 0.0) * count
    return votes


def boosted(score: float, votes: float) -> float:
    """``score`` after a net vote of ``votes`` (see the module docstring)."""
    vote = math.tanh(votes / 2)
    if vote >= 0:
        return score + (1 - score) * RAISE * vote
    return score * (1 + LOWER * vote)
