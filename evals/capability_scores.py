"""Can an agent act on a search's confidence? Separation of right from wrong first results.

    python evals/capability_scores.py [--semantic] [--json] [--results [FILE]]

For every source (ToolAlpaca, ToolBench from ``../shared/evals``, our own catalog's
development sets from ``evals/own_catalog``; never its sealed set), each request's first result is right (a gold operation) or wrong
(another one, or anything at all for a request whose operation is not exposed). The AUC
of the result's ``confidence`` (``capabilities.ranking.confidence``: the first score raised
by its lead over the second) over those two groups says how well it tells a sure match from
a guess: 1.0 = every right first result outscores every wrong one, 0.5 = no better than
a coin; ``auc_first_score`` is the same for the first score alone (lead weight 0).

Both parameters are chosen by leave-one-source-out, each source weighing the same: the lead
weight from :data:`LEAD_WEIGHTS` with the best mean AUC on the other sources, then, at the
shipped weight, the threshold below which an agent should compare several cards: the cut
with the best balanced accuracy (mean of the share of right first results above it and of
wrong ones below it). Published: the median of the folds' picks.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "evals")]

from capability_search import add_semantic_option, load_catalog, read_queries, report, requested_embedder  # noqa: E402
from memory_bank.capabilities.ranking import confidence  # noqa: E402
from memory_bank.capabilities.ranking.confidence import Confidence  # noqa: E402
from memory_bank.capabilities.ranking.search import CapabilitySearch  # noqa: E402
from memory_bank.capabilities.registry import exposed  # noqa: E402
from memory_bank.textsearch.embeddings import Embedder  # noqa: E402
from results import add_results_option, table, write_section  # noqa: E402

SHARED = ROOT.parent / "shared" / "evals"
#: name -> (queries file, specs root)
SOURCES = {
    "toolalpaca": (SHARED / "toolalpaca" / "queries.jsonl", SHARED / "toolalpaca"),
    "toolbench": (SHARED / "toolbench" / "queries.jsonl", SHARED / "toolbench"),
    "own": (ROOT / "evals" / "own_catalog" / "requests.jsonl", ROOT / "openapi"),
    "own-blind": (ROOT / "evals" / "own_catalog" / "blind_requests.jsonl", ROOT / "openapi"),
    "own-sealed2": (ROOT / "evals" / "own_catalog" / "sealed2_requests.jsonl", ROOT / "openapi"),
    "own-dev4": (ROOT / "evals" / "own_catalog" / "dev4_requests.jsonl", ROOT / "openapi"),
    "own-dev5": (ROOT / "evals" / "own_catalog" / "dev5_requests.jsonl", ROOT / "openapi"),
    "own-dev6": (ROOT / "evals" / "own_catalog" / "dev6_requests.jsonl", ROOT / "openapi"),
    "own-dev7": (ROOT / "evals" / "own_catalog" / "dev7_requests.jsonl", ROOT / "openapi"),
    "own-dev8": (ROOT / "evals" / "own_catalog" / "dev8_requests.jsonl", ROOT / "openapi"),
    "own-dev9": (ROOT / "evals" / "own_catalog" / "dev9_requests.jsonl", ROOT / "openapi"),
}
#: Candidate cuts: every 0.01 in [0, 1].
CUTS = [i / 100 for i in range(101)]
#: Candidate weights of the first result's lead (0: the first score alone).
LEAD_WEIGHTS = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)

#: One request's first result: its confidence (or score), and whether it was right.
First = tuple[float, bool]
#: One request's first two scores, and whether the first result was right.
Ranked = tuple[list[float], bool]


def auc(right: Sequence[float], wrong: Sequence[float]) -> float:
    """The probability that a right first result outscores a wrong one (ties count half):
    the area under the ROC curve, as the Mann-Whitney U statistic over both groups."""
    if not right or not wrong:
        raise ValueError("AUC needs at least one right and one wrong first result")
    wins = sum(1.0 if r > w else 0.5 if r == w else 0.0 for r in right for w in wrong)
    return wins / (len(right) * len(wrong))


def balanced_accuracy(firsts: Sequence[First], cut: float) -> float:
    """Mean of the share of right first results at or above ``cut`` and of wrong ones below it."""
    right = [score for score, ok in firsts if ok]
    wrong = [score for score, ok in firsts if not ok]
    shares = [sum(s >= cut for s in right) / len(right) if right else None, sum(s < cut for s in wrong) / len(wrong) if wrong else None]
    known = [share for share in shares if share is not None]
    return sum(known) / len(known)


def leave_one_source_out(firsts: Mapping[str, Sequence[First]]) -> dict[str, tuple[float, float]]:
    """Per held-out source: the cut the other sources choose (the lowest of equally good ones)
    and its balanced accuracy there."""
    folds = {}
    for held_out in firsts:
        others = [name for name in firsts if name != held_out]
        cut = max(CUTS, key=lambda c: sum(balanced_accuracy(firsts[name], c) for name in others))
        folds[held_out] = (cut, balanced_accuracy(firsts[held_out], cut))
    return folds


def first_results(queries_path: Path, specs_root: Path, embedder: Embedder | None) -> list[Ranked]:
    """Each request's first two scores and whether the first is a gold operation (a request
    with no results at all has nothing to act on and is left out)."""
    queries = read_queries(queries_path)
    index = CapabilitySearch(load_catalog(specs_root, sorted({q.spec for q in queries})), embedder=embedder)
    ranked = []
    for query in queries:
        matches = index.search(query.text, limit=2, accept=exposed)
        if matches:
            capability = matches[0].capability
            right = capability["source"] == query.spec and f"{capability['method']} {capability['path']}" in query.gold
            ranked.append(([m.score for m in matches], right))
    return ranked


def judged(ranked: Sequence[Ranked], lead_weight: float) -> list[First]:
    """``ranked`` as (confidence at ``lead_weight``, right)."""
    judge = Confidence(lead_weight, threshold=0.0)
    return [(judge.of(scores) or 0.0, right) for scores, right in ranked]


def first_auc(firsts: Sequence[First]) -> float:
    return auc([s for s, ok in firsts if ok], [s for s, ok in firsts if not ok])


def lead_weight_folds(ranked: Mapping[str, Sequence[Ranked]]) -> dict[str, tuple[float, float]]:
    """Per held-out source: the lead weight with the best mean AUC on the other sources
    (ties: the smaller), and the held-out source's AUC at it."""
    aucs = {w: {name: first_auc(judged(rows, w)) for name, rows in ranked.items()} for w in LEAD_WEIGHTS}
    folds = {}
    for held_out in ranked:
        best = max(LEAD_WEIGHTS, key=lambda w: sum(a for name, a in aucs[w].items() if name != held_out))
        folds[held_out] = (best, aucs[best][held_out])
    return folds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON objects instead of tables")
    add_semantic_option(parser)
    add_results_option(parser)
    args = parser.parse_args(argv)
    embedder = requested_embedder(parser, args)
    shipped = confidence.LEXICAL if embedder is None else confidence.HYBRID
    ranked = {name: first_results(queries, root, embedder) for name, (queries, root) in SOURCES.items()}
    weights = lead_weight_folds(ranked)
    firsts = {name: judged(rows, shipped.lead_weight) for name, rows in ranked.items()}
    folds = leave_one_source_out(firsts)
    chosen = {
        "lead_weight": round(statistics.median(w for w, _ in weights.values()), 4),
        "threshold": round(statistics.median(cut for cut, _ in folds.values()), 4),
    }
    rows: list[dict[str, Any]] = []
    for name, results in firsts.items():
        right, wrong = [s for s, ok in results if ok], [s for s, ok in results if not ok]
        weight, held_out_auc = weights[name]
        cut, held_out = folds[name]
        rows.append({
            "source": name,
            "mode": "hybrid" if embedder else "lexical",
            "first_right": len(right),
            "first_wrong": len(wrong),
            "auc_first_score": round(first_auc(judged(ranked[name], 0.0)), 3),
            "auc": round(auc(right, wrong), 3),
            "fold_lead_weight": weight,
            "held_out_auc": round(held_out_auc, 3),
            "fold_cut": cut,
            "held_out_balanced_accuracy": round(held_out, 3),
            "median_right": round(statistics.median(right), 3),
            "median_wrong": round(statistics.median(wrong), 3),
        })  # fmt: skip
    for row in rows:
        report(row, as_json=args.json)
    report(chosen | {"shipped_lead_weight": shipped.lead_weight, "shipped_threshold": shipped.threshold}, as_json=args.json)
    if args.results:
        mode = "hybrid" if embedder else "lexical"
        body = table(rows) + (
            f"\n\nMedian of the leave-one-source-out picks: lead weight {chosen['lead_weight']} (shipped"
            f" {shipped.lead_weight}), threshold at the shipped weight {chosen['threshold']} (shipped {shipped.threshold})."
        )
        write_section(args.results, f"scores-{mode}", f"Capability search, first-result confidence, {mode}", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
