"""What each part of capability ranking is worth, on every source: ablation and leave-one-source-out.

    python evals/ablation.py [--source NAME QUERIES SPECS_ROOT ...] [--twilio N] [--only NAME ...]
        [--loso] [--tolerance 0.002] [--json] [--results [FILE]]

Sources: ToolAlpaca and ToolBench (``../shared/evals``), the Twilio known-item check (its
requests made by ``bench/capability_search_twilio.py``, N of them, 1,000 by default), and
any ``--source`` given (e.g. our own catalog: ``--source own evals/own_catalog/queries.jsonl
openapi``). Each source is ranked with the shipped ranker and with each component of
:data:`capability_search.COMPONENTS` switched off, one at a time (a real ``Ranking``, as
``--ablate`` does). The table gives hit@1, hit@5, final@1 and MRR per source and
component, and the change against the full ranker.

Verdict per component: it *helps* a source when switching it off costs more than the
tolerance in MRR, *hurts* when switching it off gains more than that, else it is inert
there. It stays when it helps at least two sources and hurts none.

``--loso`` chooses the parameters (each field weight, the API share, the question-fallback
share, BM25's k1 and b) one at a time around the shipped values from
:data:`GRID`: for each source, the value with the best mean MRR over the *other* sources
(sources weigh the same, ties: the shipped value, then grid order); printed with the
held-out source's MRR at that value and at the shipped one, and the value best over
all sources.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "evals"), str(ROOT / "bench")]

from capability_search import COMPONENTS, Query, ablated, evaluate, load_catalog, memory_bank_ranker, read_queries  # noqa: E402
from capability_search_twilio import known_item_queries  # noqa: E402
from capability_search_twilio import load_catalog as load_twilio  # noqa: E402
from memory_bank.capabilities.ranking.search import Ranking  # noqa: E402
from results import add_results_option, table, write_section  # noqa: E402

SHARED = ROOT.parent / "shared" / "evals"
METRICS = ("hit@1", "hit@5", "final@1", "mrr")

#: ``--loso``: the values tried per parameter (a field name is its BM25F weight).
GRID: Mapping[str, Sequence[float]] = {
    **{name: (0.0, 0.5, 1.0, 2.0, 3.0) for name in Ranking().field_weights},
    "api_weight": (0.0, 0.1, 0.25, 0.4),
    "example_weight": (0.0, 0.25, 0.5, 0.75, 0.9),
    "fallback_weight": (0.0, 0.01, 0.03, 0.1),
    "k1": (1.2, 2.0, 3.0, 4.0),
    "b": (0.3, 0.5, 0.75, 0.9),
}


@dataclass(frozen=True)
class Source:
    name: str
    queries: Sequence[Query]
    catalog: Sequence[Mapping[str, Any]]


def file_source(name: str, queries: Path, specs_root: Path) -> Source:
    """The requests of ``queries`` that have a gold operation, over the specs they name."""
    rows = read_queries(queries)
    return Source(name, [q for q in rows if q.gold], load_catalog(specs_root, sorted({q.spec for q in rows})))


def twilio_source(count: int) -> Source:
    catalog = load_twilio()[1]
    return Source("twilio", known_item_queries(catalog, count, seed=7), catalog)


def measure(source: Source, ranking: Ranking) -> dict[str, float]:
    """hit@1, hit@5, final@1, MRR of ``source`` ranked as ``ranking`` says."""
    rank, _ = memory_bank_ranker(source.catalog, ranking=ranking)
    figures = evaluate(source.queries, rank)
    return {name: figures[name] for name in METRICS}


def with_parameter(name: str, value: float) -> Ranking:
    """The shipped ranking with one parameter (a field weight or a ``Ranking`` field) at ``value``."""
    shipped = Ranking()
    if name in shipped.field_weights:
        return replace(shipped, field_weights={**shipped.field_weights, name: value})
    return replace(shipped, **{name: value})


def shipped_value(name: str) -> float:
    shipped = Ranking()
    return float(shipped.field_weights[name] if name in shipped.field_weights else getattr(shipped, name))


def verdict(deltas: Sequence[float], tolerance: float) -> str:
    """``keep`` when switching the component off costs MRR on two sources and gains on none."""
    helps = sum(d < -tolerance for d in deltas)
    hurts = sum(d > tolerance for d in deltas)
    return "keep" if helps >= 2 and hurts == 0 else ("inert" if helps == hurts == 0 else "drop")


def ablation(sources: Sequence[Source], components: Sequence[str], tolerance: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The long table (source x component with deltas) and the verdict per component."""
    rows, deltas = [], {name: [] for name in components}
    for source in sources:
        full = measure(source, Ranking())
        rows.append({"source": source.name, "ablated": "(full)", **full, "Δhit@1": "", "Δhit@5": "", "ΔMRR": ""})
        for name in components:
            figures = measure(source, ablated([name]))
            delta = {m: round(figures[m] - full[m], 4) for m in ("hit@1", "hit@5", "mrr")}
            deltas[name].append(delta["mrr"])
            rows.append({"source": source.name, "ablated": name, **figures, "Δhit@1": delta["hit@1"], "Δhit@5": delta["hit@5"], "ΔMRR": delta["mrr"]})
    names = [s.name for s in sources]
    verdicts = [{"component": c, **{f"ΔMRR {n}": d for n, d in zip(names, deltas[c])}, "verdict": verdict(deltas[c], tolerance)} for c in components]
    return rows, verdicts


def loso(sources: Sequence[Source]) -> list[dict[str, Any]]:
    """Per parameter and held-out source: the value best on the other sources, and the
    held-out MRR at it and at the shipped value; then the value best on all sources."""
    rows = []
    for name, values in GRID.items():
        mrr = {value: [measure(source, with_parameter(name, value))["mrr"] for source in sources] for value in values}
        shipped = shipped_value(name)
        order = sorted(values, key=lambda v: (v != shipped, list(values).index(v)))
        row: dict[str, Any] = {"parameter": name, "shipped": shipped}
        for i, source in enumerate(sources):
            train = [j for j in range(len(sources)) if j != i]
            best = max(order, key=lambda v: sum(mrr[v][j] for j in train))
            row[f"{source.name}: chosen"] = best
            row[f"{source.name}: held-out MRR (shipped)"] = f"{mrr[best][i]:.4f} ({mrr.get(shipped, mrr[best])[i]:.4f})"
        row["best on all"] = max(order, key=lambda v: sum(mrr[v]))
        rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", nargs=3, action="append", default=[], metavar=("NAME", "QUERIES", "SPECS_ROOT"), help="another source of queries")
    parser.add_argument("--twilio", type=int, default=1000, help="Twilio known-item requests (0: leave the source out)")
    parser.add_argument("--only", action="append", default=[], choices=COMPONENTS, metavar="NAME", help="ablate only these components")
    parser.add_argument("--tolerance", type=float, default=0.002, help="MRR change that counts as help or harm (default 0.002)")
    parser.add_argument("--loso", action="store_true", help="also choose the parameters by leave-one-source-out")
    parser.add_argument("--json", action="store_true", help="print JSON lines instead of Markdown tables")
    add_results_option(parser)
    args = parser.parse_args(argv)

    sources = [
        file_source("toolalpaca", SHARED / "toolalpaca" / "queries.jsonl", SHARED / "toolalpaca"),
        file_source("toolbench", SHARED / "toolbench" / "queries.jsonl", SHARED / "toolbench"),
        *([twilio_source(args.twilio)] if args.twilio > 0 else []),
        *(file_source(name, Path(queries), Path(root)) for name, queries, root in args.source),
    ]
    rows, verdicts = ablation(sources, args.only or COMPONENTS, args.tolerance)
    tables = [rows, verdicts, *([loso(sources)] if args.loso else [])]
    for rows_of_table in tables:
        print("\n".join(json.dumps(row) for row in rows_of_table) if args.json else table(rows_of_table) + "\n")
    if args.results:
        body = f"Tolerance: MRR ±{args.tolerance}.\n\n" + "\n\n".join(table(t) for t in tables)
        write_section(args.results, "capability-ablation", "Capability search: ablation per source (lexical)", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
