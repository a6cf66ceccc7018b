"""Capability search at scale: all 55 Twilio specs (1,447 operations) in one registry.

    python bench/capability_search_twilio.py [--specs-root DIR] [--queries N] [--seed S] [--json] [--semantic] [--results [FILE]]

Prints index build time (the ``CapabilitySearch`` constructor alone; parsing specs and
building the catalog are codegen's cost) and median / p95 latency of the lexical path
over N generated requests: wall clock, and this thread's CPU time, which other
processes on a shared 2-core box cannot inflate (the wall p95 there is mostly
time spent descheduled). There is no gold data for Twilio, so requests are made from
the operations themselves: the first sentence of a description (or the title) with words dropped, shuffled
and wrapped in conversational filler, seeded for repeatability. Those requests also
give a known-item check (is the source operation in the top 1 / 5?) - a sanity figure
for 1,447 look-alike operations, not a quality claim. ``--semantic`` measures the
embedding hybrid instead (``semantic`` extra; build then includes embedding every operation).
``--results`` rewrites this run's section of ``evals/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "evals"), str(ROOT / "src")]

from capability_search import Query, add_semantic_option, latency_summary, op_key, query_metrics, report, requested_embedder  # noqa: E402
from memory_bank_codegen.catalog_builder import build_catalogs  # noqa: E402
from memory_bank_codegen.loader import load_spec  # noqa: E402
from memory_bank.capabilities.ranking.search import CapabilitySearch  # noqa: E402
from results import add_results_option, table, write_section  # noqa: E402

DEFAULT_ROOT = ROOT.parent / "shared" / "evals" / "large-specs" / "twilio"
FILLERS = ("", "can you ", "please ", "I need to ", "how do I ", "help me ")


def perturbed_request(capability: Mapping[str, Any], rng: random.Random) -> str:
    """A request an agent might write for ``capability``: its own words, some dropped, reordered."""
    words = (capability["description"] or capability["title"]).split(".")[0].split()
    keep = [w for w in words if rng.random() > 0.25] or words[:1]
    if len(keep) > 2 and rng.random() < 0.5:
        i = rng.randrange(len(keep) - 1)
        keep[i], keep[i + 1] = keep[i + 1], keep[i]
    return rng.choice(FILLERS) + " ".join(keep[:12]).lower()


def load_catalog(specs_root: Path = DEFAULT_ROOT) -> tuple[int, list[dict[str, Any]]]:
    """How many specs there are under ``specs_root``, and all their operations as one registry."""
    specs = [(path.name, load_spec(path)) for path in sorted(specs_root.glob("*.json"))]
    return len(specs), build_catalogs(specs, default_expose=True)


def known_item_queries(catalog: Sequence[Mapping[str, Any]], count: int, seed: int) -> list[Query]:
    """``count`` requests made from distinct operations of ``catalog`` (:func:`perturbed_request`),
    each with its source operation as gold, seeded for repeatability."""
    rng = random.Random(seed)
    targets = rng.sample(range(len(catalog)), min(count, len(catalog)))
    queries = []
    for target in targets:
        source, key = op_key(catalog[target])
        queries.append(Query(f"twilio-{target}", source, perturbed_request(catalog[target], rng), frozenset({key}), key))
    return queries


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--specs-root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--queries", type=int, default=300, help="how many generated requests (default 300)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_semantic_option(parser)
    add_results_option(parser)
    args = parser.parse_args(argv)
    embedder = requested_embedder(parser, args)

    started = time.perf_counter()
    spec_count, catalog = load_catalog(args.specs_root)
    catalog_ms = (time.perf_counter() - started) * 1000

    started, cpu_started = time.perf_counter(), time.thread_time()
    index = CapabilitySearch(catalog, embedder=embedder)
    build_ms, build_cpu_ms = (time.perf_counter() - started) * 1000, (time.thread_time() - cpu_started) * 1000

    queries = known_item_queries(catalog, args.queries, args.seed)
    for query in queries[:20]:  # warm caches (stemmer, allocator) as a running server has them
        index.search(query.text, limit=5)
    latencies, cpu_times, at1, at5 = [], [], 0.0, 0.0
    for query in queries:
        started, cpu_started = time.perf_counter(), time.thread_time()
        matches = index.search(query.text, limit=5)
        latencies.append((time.perf_counter() - started) * 1000)
        cpu_times.append((time.thread_time() - cpu_started) * 1000)
        metrics = query_metrics(query, [op_key(m.capability) for m in matches])
        at1, at5 = at1 + metrics["hit@1"], at5 + metrics["hit@5"]
    result = {
        "specs": spec_count,
        "semantic": args.semantic,
        "operations": len(catalog),
        "catalog_ms": round(catalog_ms, 1),
        "build_ms": round(build_ms, 1),
        "build_cpu_ms": round(build_cpu_ms, 1),
        "queries": len(queries),
        **latency_summary(latencies),
        **latency_summary(cpu_times, "query_cpu_ms"),
        "known_item@1": round(at1 / len(queries), 3),
        "known_item@5": round(at5 / len(queries), 3),
    }
    report(result, as_json=args.json)
    if args.results:
        name = "twilio" + ("-semantic" if args.semantic else "")
        title = f"Capability search at scale, Twilio known-item check, {'lexical + semantic' if args.semantic else 'lexical'}"
        write_section(args.results, name, title, table([result]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
