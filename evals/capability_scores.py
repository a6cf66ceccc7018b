"""Can an agent act on the first result's score? Separation of right from wrong first results.

    python evals/capability_scores.py [--semantic] [--json] [--results [FILE]]

For every source (ToolAlpaca, ToolBench from ``../shared/evals``, our own catalog's five
development sets from ``evals/own_catalog``; never its sealed set), each request's first result is right (a gold operation) or wrong
(another one, or anything at all for a request whose operation is not exposed). The AUC
of the first score over those two groups says how well the score tells a sure match from
a guess: 1.0 = every right first result outscores every wrong one, 0.5 = no better than
a coin. The threshold below which an agent should compare several cards is chosen by
leave-one-source-out: each fold picks the cut with the best balanced accuracy (mean of
the share of right first results above it and of wrong ones below it) on the other
sources, each source weighing the same, and is scored on the held-out one; the
published threshold is the median of the folds' picks.
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

#: One request's first result: its score, and whether it was right.
First = tuple[float, bool]


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


def first_results(queries_path: Path, specs_root: Path, embedder: Embedder | None) -> list[First]:
    """Each request's first score and whether it is a gold operation (a request with no
    results at all has nothing to act on and is left out)."""
    queries = read_queries(queries_path)
    index = CapabilitySearch(load_catalog(specs_root, sorted({q.spec for q in queries})), embedder=embedder)
    firsts = []
    for query in queries:
        matches = index.search(query.text, limit=1, accept=exposed)
        if matches:
            capability = matches[0].capability
            right = capability["source"] == query.spec and f"{capability['method']} {capability['path']}" in query.gold
            firsts.append((matches[0].score, right))
    return firsts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON objects instead of tables")
    add_semantic_option(parser)
    add_results_option(parser)
    args = parser.parse_args(argv)
    embedder = requested_embedder(parser, args)
    firsts = {name: first_results(queries, root, embedder) for name, (queries, root) in SOURCES.items()}
    folds = leave_one_source_out(firsts)
    threshold = round(statistics.median(cut for cut, _ in folds.values()), 4)
    rows: list[dict[str, Any]] = []
    for name, results in firsts.items():
        right, wrong = [s for s, ok in results if ok], [s for s, ok in results if not ok]
        cut, held_out = folds[name]
        rows.append({
            "source": name,
            "mode": "hybrid" if embedder else "lexical",
            "first_right": len(right),
            "first_wrong": len(wrong),
            "auc": round(auc(right, wrong), 3),
            "fold_cut": cut,
            "held_out_balanced_accuracy": round(held_out, 3),
            "median_right": round(statistics.median(right), 3),
            "median_wrong": round(statistics.median(wrong), 3),
        })  # fmt: skip
    for row in rows:
        report(row, as_json=args.json)
    report({"threshold": threshold}, as_json=args.json)
    if args.results:
        mode = "hybrid" if embedder else "lexical"
        body = table(rows) + f"\n\nThreshold (median of the leave-one-source-out picks): {threshold}"
        write_section(args.results, f"scores-{mode}", f"Capability search, first-result score as confidence, {mode}", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
