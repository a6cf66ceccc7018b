"""What the served hybrid costs: ``search_capabilities`` lexical vs hybrid, our catalog and Twilio.

    python bench/capability_search_latency.py [--twilio-root DIR] [--queries N] [--json] [--results [FILE]]

Measures the path the server runs (``CapabilityRegistry``, as ``MEMORY_BANK_SEMANTIC_CAPABILITIES``
builds it), for the exposed operations of our own spec (the own-catalog requests) and for all
of Twilio's specs (requests generated as ``capability_search_twilio`` makes them). Per
catalog and mode: start-up cost (loading the model, once per process, and building the
registry up to its first answer: the index is built, and for the hybrid every capability
embedded, at the first search of a set of operations) and per-query latency p50 / p95
over the requests, after a short warm-up. Needs the ``semantic`` extra.
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
sys.path[:0] = [str(ROOT / "evals"), str(ROOT / "src"), str(ROOT / "bench")]

from capability_search import latency_summary, read_queries, report  # noqa: E402
from capability_search_twilio import DEFAULT_ROOT, perturbed_request  # noqa: E402
from memory_bank_codegen.catalog_builder import build_catalogs  # noqa: E402
from memory_bank_codegen.loader import load_spec  # noqa: E402
from memory_bank.capabilities.registry import CapabilityRegistry  # noqa: E402
from memory_bank.generated.catalog import CAPABILITIES  # noqa: E402
from memory_bank.textsearch.embeddings import Embedder, load_embedder  # noqa: E402
from results import add_results_option, table, write_section  # noqa: E402

OWN_REQUESTS = ROOT / "evals" / "own_catalog" / "requests.jsonl"
WARM_UP = 10


def measure(name: str, catalog: Sequence[Mapping[str, Any]], requests: Sequence[str], embedder: Embedder | None) -> dict[str, Any]:
    """Registry build time and per-query latency of ``search_capabilities`` over ``requests``."""
    started = time.perf_counter()
    registry = CapabilityRegistry(catalog, embedder=embedder)
    registry.search(requests[0], allows=lambda _: True)  # builds the index (and embeds the texts) for this caller
    build_ms = (time.perf_counter() - started) * 1000
    for request in requests[:WARM_UP]:
        registry.search(request, allows=lambda _: True)
    latencies = []
    for request in requests:
        started = time.perf_counter()
        registry.search(request, allows=lambda _: True)
        latencies.append((time.perf_counter() - started) * 1000)
    return {
        "catalog": name,
        "mode": "lexical" if embedder is None else "hybrid",
        "operations": len(catalog),
        "queries": len(requests),
        "build_ms": round(build_ms, 1),
        **latency_summary(latencies),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--twilio-root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--queries", type=int, default=200, help="generated Twilio requests (default 200)")
    parser.add_argument("--json", action="store_true", help="print one JSON object per row")
    add_results_option(parser)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    embedder = load_embedder()
    if embedder is None:
        parser.error("the hybrid needs the semantic extra: pip install -e '.[semantic]'")
    model_load_ms = round((time.perf_counter() - started) * 1000, 1)

    ours = [c for c in CAPABILITIES if c["policy"]["expose"]]
    own_requests = [q.text for q in read_queries(OWN_REQUESTS)]
    twilio = build_catalogs([(p.name, load_spec(p)) for p in sorted(args.twilio_root.glob("*.json"))], default_expose=True)
    rng = random.Random(7)
    twilio_requests = [perturbed_request(twilio[i], rng) for i in rng.sample(range(len(twilio)), min(args.queries, len(twilio)))]
    rows = [
        measure(name, catalog, requests, model) | {"model_load_ms": model_load_ms if model else 0.0}
        for name, catalog, requests in (("own", ours, own_requests), ("twilio", twilio, twilio_requests))
        for model in (None, embedder)
    ]
    for row in rows:
        report(row, as_json=args.json)
    if args.results:
        write_section(args.results, "latency-hybrid", "Capability search latency, served path, lexical vs hybrid", table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
