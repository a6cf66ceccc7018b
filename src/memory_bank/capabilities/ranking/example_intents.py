"""The examples as training phrases: which of the operations a request is, learnt from them.

The embedding signal alone takes an operation's closest text (:mod:`semantic`). With twenty
examples an operation, a request lands close to one example of the wrong operation as easily
as to one of the right one: "I moved to Leeds" is near "the user moved", an edit's example.
An intent engine does not ask which training phrase is nearest; it trains a classifier on
all of them, so what the examples of an operation share decides, and one stray phrasing
does not. This is that classifier: a multinomial logistic regression (scikit-learn's,
L2-regularised with ``C = INTENT_C``) over the unit vectors of every text of the operations
that have examples, labelled with their operation.

Its posterior re-shapes the similarity of those operations only: the most probable keeps
the best similarity among them, the others get their probability's share of it. So the
signal stays on the cosine scale that :func:`textsearch.fusion.fuse` expects, and an
operation without examples (a vendor spec's) keeps its own similarity: a catalog without
examples ranks as before.

The regularisation was chosen by leaving one of our two development request sets out
(``docs/decisions/0032-example-intents.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["INTENT_C", "ExampleIntents"]

#: Inverse L2 strength of the classifier; 30 and above is a plateau on both development sets.
INTENT_C = 30.0


class ExampleIntents:
    """A classifier over the texts of the operations with examples; None-able by :meth:`fit`."""

    def __init__(self, model: Any, members: Any) -> None:
        self._model = model
        self._members = members

    @classmethod
    def fit(cls, matrix: Any, owners: Sequence[int], with_examples: Sequence[int]) -> ExampleIntents | None:
        """Train on the rows of ``matrix`` (one unit vector per text) whose owner (its
        capability's position, ``owners``) is one of ``with_examples``; None when fewer
        than two operations have examples, since there is nothing to tell apart."""
        import numpy as np
        from sklearn.linear_model import LogisticRegression

        members = np.asarray(sorted(set(with_examples)), dtype=np.int64)
        if len(members) < 2:
            return None
        labels = np.asarray(owners)
        rows = np.isin(labels, members)
        model = LogisticRegression(C=INTENT_C, max_iter=5000).fit(matrix[rows], labels[rows])
        return cls(model, members)

    def reshape(self, similarity: Any, vector: Any) -> Any:
        """``similarity`` (per capability) with the members' values re-shaped by the
        classifier's posterior for the query ``vector``: see the module docstring."""
        posterior = self._model.predict_proba(vector.reshape(1, -1))[0]
        reshaped = similarity.copy()
        reshaped[self._model.classes_] = posterior / posterior.max() * similarity[self._members].max()
        return reshaped
