"""Memory search at scale: a million memories over a thousand orgs, on MariaDB and SQLite.

    .venv/bin/python bench/memory_scale.py [--memories 1000000] [--orgs 1000] [--queries 1000]
        [--backend sqlite|mysql] [--writers 8] [--json]

Memories are generated from the LoCoMo conversations in ``../shared/evals/locomo-dev``
(read in place) as ``bench/memory_backends.py`` does: each org gets one conversation
with its speakers renamed, each memory joins one turn with half of another, so every
org has words of its own and the text is real conversational English. Orgs are loaded
interleaved, ``CHUNK`` memories of one org at a time, as tenants write at once in a
deployment (an org's rows end up spread over the table, not in one block).

Printed per backend:

* ``load_rows_per_s``: bulk writes, ``MemoryStore.import_records`` (``importMemories``),
  one transaction per ``CHUNK`` memories, full-text index maintained as rows arrive;
* ``writes_per_s``: single saves (``MemoryStore.create``, one memory per transaction as
  ``postMemory`` does) from ``--writers`` threads at once, and from one thread;
* search latency p50/p95/p99 and max (wall; and process CPU per search, which excludes the
  database server's own CPU on MariaDB) of ``MemoryStore.search`` with limit 10 for
  1-5-word queries drawn from the org's own memories, overall and by query length, once
  each org's postings are held (``search_ms_*``); the first pass over the same queries,
  whose first search of each org loads them (``first_search_ms_*``); and the same queries
  by a store that holds none (``unheld_search_ms_*``, ``lexical``'s plan: the baseline, in
  the same process on the same data; ``unheld_over_held_p50``), ``postings_mb`` held;
* ``top10_agreement``: share of the top 10 shared with the exact owner-local BM25 (every
  searched row read and counted afresh) over ``AGREEMENT_QUERIES`` queries, and
  ``unheld_top10_agreement`` for the plan without postings (which samples large owners);
* the worst case beside it: the same figures for adversarial queries (``ADVERSARIAL``
  kinds: 32 one- and two-letter terms the org's memories hold, short terms mixed with
  words, stopwords around short terms, 2,000 characters of the org's prose, 100 distinct
  words, one word repeated), ``adversarial_ms_*`` overall and ``<kind>_ms_p50/max``;
* ``size_mb``: the memory table, its indexes and the full-text index, on disk.

MariaDB comes from ``MEMORY_BANK_TEST_MYSQL_URL`` (or ``--mysql-url``); the bench
creates a ``mb_test_bench_*`` database there and drops it. The machine is shared:
run the 1M case in the background (``nohup ... &``) and compare CPU with wall. For one
owner too large to scan (the full-text index plan), ``--memories 30000 --orgs 1``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import sqlalchemy as sa

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "evals")]

from capability_search import percentile, report  # noqa: E402
from memory_backends import EVERYTHING, SEED, batch_records, conversations, mysql_database, org_memories, principal, queries  # noqa: E402

from memory_bank.settings import Settings  # noqa: E402
from memory_bank.store import MemoryStore, open_database  # noqa: E402
from memory_bank.store.search import lexical  # noqa: E402
from memory_bank.store.search.text import query_terms  # noqa: E402
from memory_bank.textsearch.tokenize import MEMORY_STOPWORDS  # noqa: E402

#: Memories of one org written per transaction, and per turn of the interleaved load.
CHUNK = 100
#: Single saves per write measurement.
WRITES = 2000
#: Adversarial queries per kind.
ADVERSARIAL = 20
#: Queries whose top 10 are compared with the exact owner-local ranking (a full recount each).
AGREEMENT_QUERIES = 100
#: Longest query the API accepts (``getMemorySearch`` q).
QUERY_CHARS = 2000


def load(store: MemoryStore, corpus: dict[int, list[str]], progress: Callable[[int], None]) -> float:
    """Interleaved bulk load, CHUNK memories of one org per transaction; rows per second."""
    start, rows = time.perf_counter(), 0
    longest = max(len(c) for c in corpus.values())
    for first in range(0, longest, CHUNK):
        for org, contents in corpus.items():
            batch = contents[first : first + CHUNK]
            if batch:
                store.import_records(principal(org), batch_records(batch, first))
                rows += len(batch)
        progress(rows)
    return rows / (time.perf_counter() - start)


def writes_per_second(store: MemoryStore, orgs: int, writers: int) -> float:
    """Single saves from ``writers`` threads at once, each to a random org.

    The contents differ from one call to the next: a save of content already saved is an
    idempotent replay (no insert), which is what an earlier version of this bench timed
    for its second measurement."""
    rng = random.Random(f"{SEED}-{writers}-writers")
    contents = [(rng.randrange(orgs), f"bench write {writers}/{n} {rng.random()}") for n in range(WRITES)]
    start = time.perf_counter()
    with ThreadPoolExecutor(writers) as pool:
        list(pool.map(lambda item: store.create(principal(item[0]), {"content": item[1]}), contents))
    return WRITES / (time.perf_counter() - start)


def adversarial_queries(corpus: dict[int, list[str]], rng: random.Random) -> list[tuple[str, int, str]]:
    """(kind, org, query): ``ADVERSARIAL`` queries of each kind, from the org's own memories."""
    out = []
    stopwords = sorted(MEMORY_STOPWORDS)
    for n in range(ADVERSARIAL):
        org = n % len(corpus)
        memories = corpus[org]
        held = sorted({t for text in rng.sample(memories, min(len(memories), 2000)) for t in query_terms(text)})
        short = [t for t in held if len(t) <= 2] or ["x"]
        words = [t for t in held if len(t) >= 3]
        prose = " ".join(rng.sample(memories, min(len(memories), 40)))
        kinds = {
            "short_terms": " ".join(rng.sample(short, min(len(short), 32))),
            "short_and_words": " ".join(rng.sample(short, min(len(short), 3)) + rng.sample(words, 2)),
            "stopwords_and_short": " ".join(w for pair in zip(stopwords, rng.choices(short, k=len(stopwords))) for w in pair),
            "chars_2000": prose[:QUERY_CHARS],
            "distinct_100": " ".join(rng.sample(words, min(len(words), 100))),
            "repeated": " ".join([rng.choice(words)] * (QUERY_CHARS // 12)),
        }
        out += [(kind, org, q[:QUERY_CHARS]) for kind, q in kinds.items()]
    return out


def timed_search(store: MemoryStore, org: int, q: str) -> tuple[float, float]:
    """(wall ms, CPU ms) of one search with limit 10."""
    wall, cpu = time.perf_counter(), time.process_time()
    store.search(principal(org), EVERYTHING, q, 10)
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


def latencies(store: MemoryStore, picked: Sequence[tuple[int, str]]) -> list[tuple[int, float, float]]:
    """(words in the query, wall ms, CPU ms) per search."""
    return [(len(q.split()), *timed_search(store, org, q)) for org, q in picked]


def summary(values: Sequence[float], name: str) -> dict[str, float]:
    return {
        f"{name}_p50": round(statistics.median(values), 2),
        f"{name}_p95": round(percentile(values, 95), 2),
        f"{name}_p99": round(percentile(values, 99), 2),
        f"{name}_max": round(max(values), 2),
    }


def worst_case_figures(store: MemoryStore, attacks: Sequence[tuple[str, int, str]]) -> dict[str, Any]:
    """Latency of the adversarial queries, overall and per kind."""
    timings = [(kind, *timed_search(store, org, q)) for kind, org, q in attacks]
    per_kind: dict[str, float] = {}
    for kind in dict.fromkeys(k for k, _, _ in timings):
        walls = [w for k, w, _ in timings if k == kind]
        per_kind |= {f"{kind}_ms_p50": round(statistics.median(walls), 2), f"{kind}_ms_max": round(max(walls), 2)}
    return {**summary([w for _, w, _ in timings], "adversarial_ms"), **summary([c for _, _, c in timings], "adversarial_cpu_ms"), **per_kind}


def search_figures(timings: Sequence[tuple[int, float, float]]) -> dict[str, Any]:
    by_length = {
        f"{n}_words_ms_p50": round(statistics.median([w for k, w, _ in timings if k == n]), 2)
        for n in sorted({k for k, _, _ in timings})
    }
    return {**summary([w for _, w, _ in timings], "search_ms"), **summary([c for _, _, c in timings], "search_cpu_ms"), **by_length}


def agreement(engine: sa.engine.Engine, store: MemoryStore, unheld: MemoryStore, picked: Sequence[tuple[int, str]]) -> dict[str, float]:
    """Top-10 agreement with the exact owner-local BM25 (every searched row read and counted
    afresh, however large the owner): of the postings, and of the plan without them (which
    samples owners over ``lexical.SCAN_ROWS``)."""
    exact: dict[tuple[int, str], list[str]] = {}
    with _scanning_everything():
        recount = MemoryStore(engine, lexical_cache_bytes=0)
        for org, q in picked:
            exact[org, q] = [row.id for row, _ in recount.search(principal(org), EVERYTHING, q, 10)]

    def share(searcher: MemoryStore) -> float:
        shares = []
        for org, q in picked:
            got = [row.id for row, _ in searcher.search(principal(org), EVERYTHING, q, 10)]
            want = exact[org, q]
            shares.append(len(set(got) & set(want)) / max(len(want), len(got), 1))
        return round(statistics.mean(shares), 4)

    return {"top10_agreement": share(store), "unheld_top10_agreement": share(unheld)}


@contextmanager
def _scanning_everything() -> Iterator[None]:
    saved = lexical.SCAN_ROWS, lexical.SAMPLE_ROWS
    lexical.SCAN_ROWS = lexical.SAMPLE_ROWS = 10**9
    try:
        yield
    finally:
        lexical.SCAN_ROWS, lexical.SAMPLE_ROWS = saved


def size_mb(engine: sa.engine.Engine) -> dict[str, float]:
    """Table data, its B-tree indexes and the full-text index, in MB."""
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            pages = dict(
                connection.exec_driver_sql(
                    "SELECT CASE WHEN name LIKE 'memory_fts%' THEN 'fulltext' WHEN name = 'memory' THEN 'data'"
                    " ELSE 'index' END, SUM(pgsize) FROM dbstat GROUP BY 1"
                ).all()
            )
            return {f"{k}_mb": round(v / 2**20, 1) for k, v in pages.items()}
        data, index = connection.exec_driver_sql(
            "SELECT data_length, index_length FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'memory'"
        ).one()
        fulltext = connection.execute(
            sa.text(
                "SELECT COALESCE(SUM(allocated_size), 0) FROM information_schema.innodb_sys_tablespaces"
                " WHERE name LIKE CONCAT(DATABASE(), :aux)"
            ),
            {"aux": "/FTS\\_%"},
        ).scalar()
    return {"data_mb": round(data / 2**20, 1), "index_mb": round(index / 2**20, 1), "fulltext_mb": round(int(fulltext or 0) / 2**20, 1)}


def bench_backend(
    name: str,
    url: str,
    corpus: dict[int, list[str]],
    picked: Sequence[tuple[int, str]],
    attacks: Sequence[tuple[str, int, str]],
    writers: int,
) -> dict[str, Any]:
    engine = open_database(Settings(database_url=url))
    store = MemoryStore(engine)
    total = sum(len(c) for c in corpus.values())
    started = time.perf_counter()
    cpu_started = time.process_time()

    def progress(rows: int) -> None:
        if rows % 100_000 < CHUNK * len(corpus):
            print(f"[{name}] {rows}/{total} rows, {time.perf_counter() - started:.0f}s", file=sys.stderr, flush=True)

    rate = load(store, corpus, progress)
    load_cpu = time.process_time() - cpu_started
    first = latencies(store, picked)  # each org's first search loads its postings
    timings = latencies(store, picked)
    worst = worst_case_figures(store, attacks)
    unheld = MemoryStore(engine, lexical_cache_bytes=0)
    unheld_timings = latencies(unheld, picked)
    held = store._ranking._postings  # noqa: SLF001  (what the process holds)
    result = {
        "backend": name,
        "memories": total,
        "load_rows_per_s": round(rate),
        "load_client_cpu_s": round(load_cpu),
        f"writes_per_s_{writers}_writers": round(writes_per_second(store, len(corpus), writers)),
        "writes_per_s_1_writer": round(writes_per_second(store, len(corpus), 1)),
        **search_figures(timings),
        **summary([w for _, w, _ in first], "first_search_ms"),
        **summary([w for _, w, _ in unheld_timings], "unheld_search_ms"),
        "unheld_over_held_p50": round(statistics.median([w for _, w, _ in unheld_timings]) / statistics.median([w for _, w, _ in timings]), 2),
        "postings_mb": round((held.held if held else 0) / 2**20, 1),
        **agreement(engine, store, unheld, picked[:AGREEMENT_QUERIES]),
        **worst,
        **size_mb(engine),
    }
    engine.dispose()
    print(f"[{name}] done: {result}", file=sys.stderr, flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=1_000_000)
    parser.add_argument("--orgs", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--backend", choices=("sqlite", "mysql"), help="one backend (default: both)")
    parser.add_argument("--writers", type=int, default=8, help="threads saving at once for writes_per_s")
    parser.add_argument("--mysql-url", default=os.environ.get("MEMORY_BANK_TEST_MYSQL_URL", "mysql+mysqldb://root@127.0.0.1:3306/test"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    rng = random.Random(SEED)
    talks = conversations()
    per_org = args.memories // args.orgs
    corpus = {org: org_memories(org, talks[org % len(talks)], per_org, rng) for org in range(args.orgs)}
    picked = queries(corpus, args.queries, rng)
    attacks = adversarial_queries(corpus, rng)
    results = []
    if args.backend in (None, "mysql"):
        with mysql_database(args.mysql_url) as url:
            results.append(bench_backend("mariadb", url, corpus, picked, attacks, args.writers))
    if args.backend in (None, "sqlite"):
        with tempfile.TemporaryDirectory() as scratch:
            results.append(bench_backend("sqlite", f"sqlite:///{scratch}/scale.db", corpus, picked, attacks, args.writers))
    if args.json:
        report({"memories": args.memories, "orgs": args.orgs, "queries": args.queries, "backends": results}, as_json=True)
        return
    print(f"{args.memories} memories over {args.orgs} orgs; {args.queries} searches (limit 10, 1-5 words)")
    print(f"worst case: {len(attacks)} adversarial searches, {ADVERSARIAL} of each kind")
    for row in results:
        print(f"[{row['backend']}]")
        report({k: v for k, v in row.items() if k != "backend"}, as_json=False)


if __name__ == "__main__":
    main()
