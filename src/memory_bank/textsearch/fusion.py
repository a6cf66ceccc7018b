"""Fusion of a lexical and an embedding score, the same rule for both searches.

Each signal is put on "share of this query's best" first, with one difference: the
lexical best is floored at ``LEXICAL_FLOOR``. The lexical score is already calibrated
(the share of the query's idf mass a document covers, see :mod:`bm25`), so when no
document covers even a tenth of the request, its best lexical match is a weak one and
is not inflated to 1.0 - the embedding decides. The parameters were chosen by
leave-one-spec-out cross-validation on capability search
(``python evals/capability_search.py --semantic --cv`` reproduces the check) and set
before memory search used them (``docs/decisions/0003-fusion-parameters.md``).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["LEXICAL_FLOOR", "SEMANTIC_WEIGHT", "fuse"]

#: Share of the fused score that comes from the embedding (cross-validated, see above).
SEMANTIC_WEIGHT = 0.2
#: A lexical best below this share of the query is scaled as such, not stretched to 1.0.
LEXICAL_FLOOR = 0.1


def fuse(
    lexical: Sequence[float],
    semantic: Sequence[float],
    weight: float = SEMANTIC_WEIGHT,
    lexical_floor: float = LEXICAL_FLOOR,
) -> list[float]:
    """Convex combination of the two signals, each first divided by its best value for this
    query, the lexical best floored at ``lexical_floor``.

    The two scales differ (a strong lexical match may score 0.3, an unrelated text still
    has cosine 0.2), so each is put on "share of this query's best" before mixing: score
    fusion of normalised scores keeps more of the ranking than rank fusion (RRF) does
    (Bruch, Gai & Ingber, 2023). But the lexical score already says how much of the
    request a document covers: a best of 0.01 is noise, and dividing by it would give that
    noise full weight. So the divisor is ``max(best, lexical_floor)``. The result is in
    [0, 1], relative to the query.
    """
    top_lexical = max(max(lexical, default=0.0), lexical_floor) or 1.0
    top_semantic = max(semantic, default=0.0) or 1.0
    # min(): (1 - w) * x / x + w * y / y may round to 1.0000000000000002, and a score over 1
    # breaks the contract (the API's SearchHit.score is at most 1).
    return [min(1.0, (1 - weight) * lex / top_lexical + weight * sem / top_semantic) for lex, sem in zip(lexical, semantic)]
