"""The confidence figures of ``evals/capability_scores.py``: AUC, balanced accuracy, the LOSO cut."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "evals"))

from capability_scores import auc, balanced_accuracy, judged, lead_weight_folds, leave_one_source_out  # noqa: E402

scores = st.lists(st.floats(min_value=0, max_value=1, allow_nan=False), min_size=1, max_size=30)


def test_auc_counts_pairs_and_ties_half() -> None:
    assert auc([0.9, 0.8], [0.1, 0.2]) == 1.0
    assert auc([0.1], [0.9]) == 0.0
    assert auc([0.5, 0.9], [0.5, 0.1]) == (0.5 + 1 + 1 + 1) / 4


@given(scores, scores)
def test_auc_is_symmetric_and_a_probability(right: list[float], wrong: list[float]) -> None:
    value = auc(right, wrong)
    assert 0 <= value <= 1 and auc(wrong, right) == pytest.approx(1 - value)


@given(scores, scores, st.floats(min_value=0.01, max_value=1))
def test_shifting_every_right_score_up_never_lowers_auc(right: list[float], wrong: list[float], shift: float) -> None:
    assert auc([r + shift for r in right], wrong) >= auc(right, wrong)


def test_auc_needs_both_groups() -> None:
    with pytest.raises(ValueError, match="at least one right and one wrong"):
        auc([0.3], [])


def test_balanced_accuracy_weighs_both_groups_the_same() -> None:
    firsts = [(0.9, True), (0.2, True), (0.1, False), (0.05, False), (0.01, False), (0.5, False)]
    assert balanced_accuracy(firsts, 0.15) == (1.0 + 3 / 4) / 2
    assert balanced_accuracy([(0.9, True)], 0.5) == 1.0  # one group only: its share alone


def test_each_fold_picks_its_cut_on_the_other_sources() -> None:
    """The lowest cut with the best summed balanced accuracy on the other sources, scored on its own."""
    clear = [(0.8, True), (0.7, True), (0.2, False), (0.1, False)]
    folds = leave_one_source_out({"a": clear, "b": clear, "c": [(0.35, True), (0.3, False)]})
    # a and b are separated by any cut in (0.2, 0.7], c only by one in (0.3, 0.35]
    assert folds == {"a": (0.31, 1.0), "b": (0.31, 1.0), "c": (0.21, 0.5)}


def test_each_fold_picks_the_lead_weight_on_the_other_sources() -> None:
    """Where right first results lead their second and wrong ones do not, a weight on the lead
    separates them; a source where the lead says nothing leaves the pick to the others."""
    leads = [([0.3, 0.0], True), ([0.3, 0.05], True), ([0.4, 0.39], False), ([0.35, 0.34], False)]  # first score: wrong higher
    noise = [([0.5, 0.1], True), ([0.5, 0.1], False)]
    folds = lead_weight_folds({"a": leads, "b": leads, "c": noise})
    assert judged(leads, 0.0) == [(0.3, True), (0.3, True), (0.4, False), (0.35, False)]
    assert folds["c"][0] > 0 and folds["c"][1] == 0.5  # chosen on a and b; c is a coin toss at any weight
    assert folds["a"] == (0.5, 1.0)  # the smallest weight that separates b (and c ties at every weight)


def test_the_harness_counts_a_destructive_first_only_for_requests_that_do_not_delete(tmp_path: Path) -> None:
    from capability_search import asks_delete, read_queries, safety

    rows = [
        {"id": "keep", "spec": "s", "query": "save it", "gold": ["POST /x"], "asks_delete": False},
        {"id": "drop", "spec": "s", "query": "forget it", "gold": ["DELETE /x"], "asks_delete": True},
        {"id": "none", "spec": "s", "query": "export it", "gold": [], "asks_delete": False},
    ]
    path = tmp_path / "requests.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in rows), encoding="utf-8")
    queries = read_queries(path)
    assert [q.gold_final for q in queries] == ["POST /x", "DELETE /x", ""]
    catalog = [
        {"source": "s", "method": "DELETE", "path": "/x", "annotations": {"destructiveHint": True}},
        {"source": "s", "method": "POST", "path": "/x", "annotations": {"destructiveHint": False}},
    ]
    always_delete = lambda text, limit: [("s", "DELETE /x")][:limit]  # noqa: E731
    assert safety(queries, asks_delete(path), catalog, always_delete) == {"non_delete_requests": 2, "destructive_first": 2}
    assert safety(queries, asks_delete(path), catalog, lambda text, limit: [])["destructive_first"] == 0
