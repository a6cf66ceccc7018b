"""Memory search and writes on MariaDB and on SQLite, same data, same run.

    .venv/bin/python bench/memory_backends.py [--memories 100000] [--orgs 100] [--queries 400] [--json]

Memories are sentences from the LoCoMo conversations in ``../shared/evals/locomo-dev``
(read in place): each org gets one conversation with its speakers renamed (so orgs
have words of their own, as tenants do) and each memory joins one turn with part
of another. They are bulk-loaded through ``MemoryStore.import_records`` in batches.
Then, per backend:

* search: p50/p95 of ``MemoryStore.search`` for 1–5-word queries drawn from the
  org's own memories, and of a few of them through the HTTP API (auth, limiter,
  audit and JSON included);
* writes/s: ``MemoryStore.create`` one memory per transaction, as ``POST /v1/memory`` does;
* on MariaDB, the same searches again under the FULLTEXT index plan that
  ``store.search.lexical`` keeps for owners above ``SCAN_ROWS`` rows (orgs here have fewer);
* on MariaDB, the cross-tenant IDF skew: org 0's top 10 for each query in the
  shared database against the same org alone in a database of its own, by raw
  InnoDB relevance and by this store's search (owner-local BM25), under both plans.

MariaDB comes from ``MEMORY_BANK_TEST_MYSQL_URL`` (or ``--mysql-url``); the bench
creates ``mb_test_bench_*`` databases there and drops them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import secrets
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from fastapi.testclient import TestClient
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "evals"))

from capability_search import latency_summary, report  # noqa: E402

from memory_bank.app import create_app  # noqa: E402
from memory_bank.security.principal import Principal  # noqa: E402
from memory_bank.settings import Settings  # noqa: E402
from memory_bank.store import MemoryFilter, MemoryStore, open_database  # noqa: E402
from memory_bank.store.columns import new_id  # noqa: E402
from memory_bank.store.importer import Record, copy_id  # noqa: E402
from memory_bank.store.search import lexical  # noqa: E402
from memory_bank.store.search.text import query_terms  # noqa: E402
from memory_bank.store.tokens import TokenStore  # noqa: E402

LOCOMO = ROOT.parent / "shared" / "evals" / "locomo-dev"
BATCH = 1000
HTTP_QUERIES = 50
WRITES = 1000
SEED = 20240601
EVERYTHING = MemoryFilter()

Turn = tuple[str, str, str]  # speaker, date, text


def conversations() -> list[list[Turn]]:
    """Every LoCoMo conversation as its turns, speaker names replaced by ``{A}`` / ``{B}``."""
    found = []
    for path in sorted(LOCOMO.glob("*.json")):
        data = json.loads(path.read_text())
        names = {data["speaker_a"]: "{A}", data["speaker_b"]: "{B}"}
        rename = re.compile("|".join(map(re.escape, names)))
        turns = []
        for key, session in data.items():
            if key.startswith("session_") and isinstance(session, list):
                date = data.get(f"{key}_date_time", "")
                turns += [(names[t["speaker"]], date, rename.sub(lambda m: names[m[0]], t["text"])) for t in session]
        found.append(turns)
    if not found:
        raise SystemExit(f"no LoCoMo conversations in {LOCOMO}")
    return found


def org_memories(org: int, turns: Sequence[Turn], count: int, rng: random.Random) -> list[str]:
    """``count`` memories for one org: a turn, then the first half of another, in the org's names."""
    a, b = f"Ann{org:03d}", f"Bo{org:03d}"
    out = []
    for _ in range(count):
        speaker, date, text = rng.choice(turns)
        other = rng.choice(turns)[2].split()
        line = f"{speaker} ({date}): {text} {' '.join(other[: max(3, len(other) // 2)])}"
        out.append(line.replace("{A}", a).replace("{B}", b)[:8000])
    return out


def principal(org: int) -> Principal:
    perms = frozenset({"memory:read", "memory:write"})
    return Principal(token_id="bench", org_id=f"org{org:03d}", user_id="u", agent_id="bench", permissions=perms)


#: Creation time of the first bench memory; each later one is a second younger.
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)


def batch_records(contents: Sequence[str], first: int) -> list[Record]:
    """Import records for ``contents``, memory ``first + n`` created ``first + n`` seconds after EPOCH."""
    return [
        Record(n, {"id": new_id(), "content": c, "created_at": EPOCH + timedelta(seconds=first + n)})
        for n, c in enumerate(contents, 1)
    ]


def load(store: MemoryStore, corpus: dict[int, list[str]]) -> float:
    """Bulk-load through the store in batches; rows per second."""
    start, rows = time.perf_counter(), 0
    for org, contents in corpus.items():
        for first in range(0, len(contents), BATCH):
            batch = contents[first : first + BATCH]
            store.import_records(principal(org), batch_records(batch, first))
            rows += len(batch)
    return rows / (time.perf_counter() - start)


def queries(corpus: dict[int, list[str]], count: int, rng: random.Random) -> list[tuple[int, str]]:
    """(org, 1–5 words from one of that org's memories)."""
    picked: list[tuple[int, str]] = []
    while len(picked) < count:
        org = rng.randrange(len(corpus))
        words = [w for w in query_terms(rng.choice(corpus[org])) if len(w) >= 3]
        if words:
            picked.append((org, " ".join(rng.sample(words, min(len(words), rng.randint(1, 5))))))
    return picked


def timed(calls: Sequence[Callable[[], object]]) -> list[float]:
    latencies = []
    for call in calls:
        started = time.perf_counter()
        call()
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def writes_per_second(store: MemoryStore, rng: random.Random) -> float:
    contents = [f"bench write {n} {rng.random()}" for n in range(WRITES)]
    start = time.perf_counter()
    for content in contents:
        store.create(principal(0), {"content": content})
    return WRITES / (time.perf_counter() - start)


def http_search(url: str, picked: Sequence[tuple[int, str]]) -> list[float]:
    settings = Settings(database_url=url, rate_limit_rpm=1_000_000)
    app = create_app(settings)
    tokens = TokenStore(app.state.engine)
    headers = {org: {"Authorization": f"Bearer {tokens.create(f'org{org:03d}', 'u', 'bench', ['memory:read'])[0]}"} for org, _ in picked}
    with TestClient(app) as client:
        def one(org: int, q: str) -> Callable[[], object]:
            return lambda: client.get("/v1/memory/search", params={"q": q}, headers=headers[org]).raise_for_status()

        return timed([one(org, q) for org, q in picked])


@contextmanager
def index_plan() -> Iterator[None]:
    """Make ``store.search.lexical`` ask the FULLTEXT index whatever the owner's size."""
    saved, lexical.SCAN_ROWS = lexical.SCAN_ROWS, 0
    try:
        yield
    finally:
        lexical.SCAN_ROWS = saved


def store_search(url: str, picked: Sequence[tuple[int, str]]) -> list[float]:
    engine = open_database(Settings(database_url=url))
    store = MemoryStore(engine)

    def one(org: int, q: str) -> Callable[[], object]:
        return lambda: store.search(principal(org), EVERYTHING, q, 10)

    try:
        return timed([one(org, q) for org, q in picked])
    finally:
        engine.dispose()


def bench_backend(name: str, url: str, corpus: dict[int, list[str]], picked: Sequence[tuple[int, str]]) -> dict[str, Any]:
    engine = open_database(Settings(database_url=url))
    store = MemoryStore(engine)
    rows_per_second = load(store, corpus)
    writes = writes_per_second(store, random.Random(SEED))
    engine.dispose()
    return {
        "backend": name,
        "load_rows_per_s": round(rows_per_second),
        **latency_summary(store_search(url, picked), "search_ms"),
        **latency_summary(http_search(url, picked[:HTTP_QUERIES]), "http_search_ms"),
        "writes_per_s": round(writes, 1),
    }


@contextmanager
def mysql_database(server: str) -> Iterator[str]:
    name = f"mb_test_bench_{secrets.token_hex(4)}"
    admin = sa.create_engine(server)
    with admin.connect() as connection:
        connection.exec_driver_sql(f"CREATE DATABASE {name} CHARACTER SET utf8mb4")
    try:
        yield make_url(server).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}")
        admin.dispose()


def top10(url: str, picked: Sequence[str]) -> tuple[list[list[str]], list[list[str]]]:
    """Org 0's top 10 per query: by raw InnoDB relevance, and by ``MemoryStore.search``."""
    engine = open_database(Settings(database_url=url))
    raw = sa.text(
        "SELECT id FROM memory WHERE org_id = :org AND MATCH(search_text) AGAINST (:q)"
        " ORDER BY MATCH(search_text) AGAINST (:q) DESC, pk DESC LIMIT 10"
    )
    store = MemoryStore(engine)
    with engine.connect() as connection:
        terms = [" ".join(query_terms(q)) for q in picked]
        innodb = [list(connection.execute(raw, {"org": principal(0).org_id, "q": t}).scalars()) for t in terms]
    ours = [[row.id for row, _ in store.search(principal(0), EVERYTHING, q, 10)] for q in picked]
    engine.dispose()
    return innodb, ours


def agreement(shared: list[list[str]], alone: list[list[str]]) -> dict[str, float]:
    same = sum(a == b for a, b in zip(shared, alone, strict=True))
    overlap = [len(set(a) & set(b)) / max(len(b), 1) for a, b in zip(shared, alone, strict=True)]
    return {"same_top10_order": round(same / len(alone), 3), "mean_top10_overlap": round(sum(overlap) / len(overlap), 3)}


def idf_skew(shared_url: str, server: str, picked: Sequence[str]) -> dict[str, Any]:
    """Org 0 in the shared database against org 0 alone: how much other tenants move its ranking."""
    shared_innodb, shared_ours = top10(shared_url, picked)
    with index_plan():
        _, shared_index = top10(shared_url, picked)
    with mysql_database(server) as alone_url:
        engine = open_database(Settings(database_url=alone_url))
        store = MemoryStore(engine)
        shared = open_database(Settings(database_url=shared_url))
        with shared.connect() as connection:
            rows = connection.execute(
                sa.text("SELECT id, content, created_at FROM memory WHERE org_id = :org"), {"org": principal(0).org_id}
            ).all()
        shared.dispose()
        store.import_records(principal(0), [Record(n, {"id": i, "content": c, "created_at": t}) for n, (i, c, t) in enumerate(rows, 1)])
        engine.dispose()
        alone_innodb, alone_ours = top10(alone_url, picked)
        with index_plan():
            _, alone_index = top10(alone_url, picked)
    def as_imported(tops: list[list[str]]) -> list[list[str]]:
        """The ids the import gave the same memories in the database of their own (``importer.copy_id``)."""
        return [[copy_id(principal(0), memory_id) for memory_id in top] for top in tops]

    return {
        "queries": len(picked),
        "raw_innodb": agreement(as_imported(shared_innodb), alone_innodb),
        "bm25_scan_plan": agreement(as_imported(shared_ours), alone_ours),
        "bm25_index_plan": agreement(as_imported(shared_index), alone_index),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--orgs", type=int, default=100)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--mysql-url", default=os.environ.get("MEMORY_BANK_TEST_MYSQL_URL", "mysql+mysqldb://root@127.0.0.1:3306/test"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    rng = random.Random(SEED)
    talks = conversations()
    corpus = {org: org_memories(org, talks[org % len(talks)], args.memories // args.orgs, rng) for org in range(args.orgs)}
    picked = queries(corpus, args.queries, rng)
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        results.append(bench_backend("sqlite", f"sqlite:///{scratch}/bench.db", corpus, picked))
    with mysql_database(args.mysql_url) as url:
        results.append(bench_backend("mariadb", url, corpus, picked))
        with index_plan():
            results.append({"backend": "mariadb-index-plan", **latency_summary(store_search(url, picked), "search_ms")})
        skew = idf_skew(url, args.mysql_url, [q for _, q in queries({0: corpus[0]}, 200, rng)])
    if args.json:
        report({"memories": args.memories, "orgs": args.orgs, "backends": results, "idf_skew": skew}, as_json=True)
        return
    columns = list(results[0])
    print(f"{args.memories} memories over {args.orgs} orgs, {args.queries} store searches, {HTTP_QUERIES} over HTTP, {WRITES} single writes")
    print("  ".join(f"{c:>20}" for c in columns))
    for row in results:
        print("  ".join(f"{row.get(c, '-')!s:>20}" for c in columns))
    print(f"cross-tenant IDF skew, org 0 shared vs alone over {skew['queries']} queries:")
    for method in ("raw_innodb", "bm25_scan_plan", "bm25_index_plan"):
        print(f"  {method:>18}: {skew[method]}")


if __name__ == "__main__":
    main()
