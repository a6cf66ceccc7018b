"""Semantic memory search at one large owner: the vector index against the full scan, both backends.

    .venv/bin/python bench/semantic_scale.py [--memories 20000] [--queries 100] [--vectors synthetic|model]
        [--backend sqlite|mysql] [--json]

Memories are ``bench/memory_scale.py``'s (LoCoMo turns, speakers renamed, read in place from
``../shared/evals/locomo-dev``), all in one org, one user, plus a second org of a quarter as
many that no search may see. Vectors:

* ``synthetic`` (default): embedding 20,000 texts with the model takes many minutes on a
  shared machine, so each text gets a unit vector drawn around one of ``TOPICS`` random
  centres (which one, and the noise, fixed by a hash of the text): clustered like real
  sentence embeddings, so a query has true near neighbours, not 20,000 equidistant ones;
* ``model``: the packaged MiniLM model (use a smaller ``--memories``).

Printed per backend: ``MemoryStore``-level search (``MemorySearch.search``, limit 10, the
queries of ``memory_scale.py``) with the backend's vector index and with the full scan:
p50/p95 wall ms, and ``recall@10`` (the index's top 10 among the full scan's); the semantic
step alone (``nearest_*``: the 100 nearest rows, query vector given) and
``neighbours_recall`` (of the full scan's 100 nearest); ``vectors_read_per_search`` (stored
vectors a search reads from the database: the index's candidates and the lexical ones) and,
for the in-process index, the MiB it holds. MariaDB comes from ``MEMORY_BANK_TEST_MYSQL_URL`` (or ``--mysql-url``);
the bench creates a ``mb_test_bench_*`` database and drops it.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from sqlmodel import Session

from memory_scale import load  # also puts bench/ and evals/ on sys.path

from capability_search import percentile, report  # noqa: E402
from memory_backends import SEED, conversations, mysql_database, org_memories, principal, queries  # noqa: E402

from memory_bank.settings import Settings  # noqa: E402
from memory_bank.store import MemoryFilter, MemoryStore, open_database  # noqa: E402
from memory_bank.store.database import search_backend, vector_index  # noqa: E402
from memory_bank.store.search import semantic  # noqa: E402
from memory_bank.store.search.pipeline import MemorySearch  # noqa: E402
from memory_bank.store.search.vector_cache import CachedVectors  # noqa: E402
from memory_bank.textsearch.embeddings import DIMENSIONS, Embedder, load_embedder  # noqa: E402

#: Topic centres of the synthetic vectors, and how far a text lies from its centre: two texts
#: of one topic have a cosine of about 1 / (1 + SPREAD**2) = 0.55, of two topics about 0.
TOPICS = 400
SPREAD = 0.9


def synthetic_embedder() -> Embedder:
    centres = np.random.default_rng(SEED).normal(size=(TOPICS, DIMENSIONS)).astype(np.float32)

    def embed(texts: Sequence[str]) -> Any:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            rng = np.random.default_rng(seed)
            vector = centres[seed % TOPICS] + SPREAD * rng.normal(size=DIMENSIONS).astype(np.float32)
            rows.append(vector / np.linalg.norm(vector))
        return np.stack(rows)

    return embed


class VectorReads:
    """Counts the stored vectors searches read: every one goes through ``semantic.similarities``."""

    def __init__(self) -> None:
        self.rows = 0
        scan = semantic.similarities

        def counted(*args: Any) -> dict[int, float]:
            found = scan(*args)
            self.rows += len(found)
            return found

        semantic.similarities = counted


def timed_searches(engine: Any, ranking: MemorySearch, picked: Sequence[str], reads: VectorReads) -> tuple[list[float], list[list[int]], float]:
    """Wall ms and top-10 pks of each search of org 0, and vectors read per search."""
    owner = principal(0)
    reader = semantic.Reader(owner.org_id, owner.user_id)
    where = MemoryFilter().clauses(owner, search_backend(engine))
    times, tops, before = [], [], reads.rows
    for q in picked:
        start = time.perf_counter()
        with Session(engine) as session:
            hits = ranking.search(session, reader, where, q, 10, 0.0)
        times.append((time.perf_counter() - start) * 1000)
        tops.append([row.pk for row, _ in hits])
    return times, tops, (reads.rows - before) / len(picked)


def neighbour_figures(engine: Any, index: semantic.VectorIndex, embed: Embedder, picked: Sequence[str]) -> dict[str, float]:
    """The semantic step alone (query vectors computed beforehand): wall ms of the 100 nearest
    rows through the index (``semantic.nearest``) and by the full scan, and the share of the
    full scan's 100 the index finds."""
    owner = principal(0)
    reader = semantic.Reader(owner.org_id, owner.user_id)
    where = MemoryFilter().clauses(owner, search_backend(engine))
    found, index_ms, scan_ms = [], [], []
    with Session(engine) as session:
        for query in embed(list(picked)):
            start = time.perf_counter()
            full = semantic.similarities(session, where, query)
            middle = time.perf_counter()
            near = semantic.nearest(session, index, reader, where, query)
            index_ms.append((time.perf_counter() - middle) * 1000)
            scan_ms.append((middle - start) * 1000)
            truth = set(sorted(full, key=full.__getitem__, reverse=True)[: semantic.NEIGHBOURS])
            got = set(sorted(near, key=near.__getitem__, reverse=True)[: semantic.NEIGHBOURS])
            found.append(len(truth & got) / len(truth))
    return {
        "nearest_index_ms_p50": round(percentile(index_ms, 50), 1),
        "nearest_index_ms_p95": round(percentile(index_ms, 95), 1),
        "nearest_full_scan_ms_p50": round(percentile(scan_ms, 50), 1),
        "nearest_full_scan_ms_p95": round(percentile(scan_ms, 95), 1),
        "neighbours_recall": round(statistics.mean(found), 4),
    }


def bench_backend(name: str, url: str, corpus: dict[int, list[str]], picked: Sequence[str], embed: Embedder) -> dict[str, Any]:
    engine = open_database(Settings(database_url=url))
    store = MemoryStore(engine, embed)
    started = time.perf_counter()
    load(store, corpus, lambda rows: None)
    print(f"[{name}] loaded {sum(map(len, corpus.values()))} rows in {time.perf_counter() - started:.0f}s", file=sys.stderr, flush=True)
    index = vector_index(engine, Settings().vector_cache_bytes)
    assert index is not None, "SQLite without sqlite-vec: install the semantic extra"
    backend = search_backend(engine)
    reads = VectorReads()
    with_index, full_scan = MemorySearch(backend, embed, index), MemorySearch(backend, embed, None)
    timed_searches(engine, with_index, picked[:5], reads)  # first load of the in-process index, model warm-up
    index_ms, index_top, index_reads = timed_searches(engine, with_index, picked, reads)
    scan_ms, scan_top, scan_reads = timed_searches(engine, full_scan, picked, reads)
    recall = [len(set(a) & set(b)) / len(b) for a, b in zip(index_top, scan_top, strict=True) if b]
    result = {
        "backend": name,
        "owner_memories": len(corpus[0]),
        "index": type(index).__name__,
        "index_ms_p50": round(percentile(index_ms, 50), 1),
        "index_ms_p95": round(percentile(index_ms, 95), 1),
        "full_scan_ms_p50": round(percentile(scan_ms, 50), 1),
        "full_scan_ms_p95": round(percentile(scan_ms, 95), 1),
        "recall@10_vs_full_scan": round(statistics.mean(recall), 4),
        **neighbour_figures(engine, index, embed, picked),
        "vectors_read_per_search_index": round(index_reads),
        "vectors_read_per_search_full_scan": round(scan_reads),
    }
    if isinstance(index, CachedVectors):
        result["in_process_index_mb"] = round(index.held / 2**20, 1)
    engine.dispose()
    print(f"[{name}] done: {result}", file=sys.stderr, flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=20_000, help="memories of the searched owner")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--vectors", choices=("synthetic", "model"), default="synthetic")
    parser.add_argument("--backend", choices=("sqlite", "mysql"), help="one backend (default: both)")
    parser.add_argument("--mysql-url", default=os.environ.get("MEMORY_BANK_TEST_MYSQL_URL", "mysql+mysqldb://root@127.0.0.1:3306/test"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    rng = random.Random(SEED)
    talks = conversations()
    corpus = {0: org_memories(0, talks[0], args.memories, rng), 1: org_memories(1, talks[1 % len(talks)], args.memories // 4, rng)}
    picked = [q for _, q in queries({0: corpus[0]}, args.queries, rng)]
    embed = synthetic_embedder() if args.vectors == "synthetic" else load_embedder()
    if embed is None:
        raise SystemExit(f"--vectors model needs the semantic extra: {semantic.INSTALL_SEMANTIC}")
    results = []
    if args.backend in (None, "mysql"):
        with mysql_database(args.mysql_url) as url:
            results.append(bench_backend("mariadb", url, corpus, picked, embed))
    if args.backend in (None, "sqlite"):
        with tempfile.TemporaryDirectory() as scratch:
            results.append(bench_backend("sqlite", f"sqlite:///{scratch}/semantic.db", corpus, picked, embed))
    summary = {"memories": args.memories, "queries": len(picked), "vectors": args.vectors, "backends": results}
    if args.json:
        report(summary, as_json=True)
        return
    print(f"one owner of {args.memories} memories ({args.vectors} vectors); {len(picked)} searches, limit 10")
    report({f"{row['backend']} {k}": v for row in results for k, v in row.items() if k != "backend"}, as_json=False)


if __name__ == "__main__":
    main()
