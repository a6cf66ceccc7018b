"""Capability-search quality on real vendor specs: does the right operation come first?

    python evals/capability_search.py --queries FILE.jsonl --specs-root DIR [--also SPEC ...] [--k 5] [--json]
        [--semantic [--cv]] [--ablate NAME ...] [--results [FILE]]

Each line of FILE.jsonl is ``{"id", "spec", "query", "gold": ["METHOD /path", ...],
"gold_final"}`` with ``spec`` relative to DIR. Every distinct spec is loaded into ONE
registry through the server's own path (codegen ``build_catalogs`` with
``default_expose=True``, then ``CapabilitySearch``), so operations of all specs
compete, as they do for an agent. A spec that declares ``x-capability.expose`` (our
own, ``--specs-root openapi`` with ``"spec": "memory.yaml"``) keeps its flags: what it
does not expose but gives examples for competes in the ranking and never appears in the
results, as in the server's registry (``registry.competes``). A result counts when its
(spec, method, path) is in the query's gold chain.

Metrics: hit@1 / hit@3 / hit@k (any gold op in the top 1 / 3 / k), final@1 / final@k (the
chain's last op), MRR of the first gold hit (0 when none in the top ``max(k, 10)``), over the
requests whose gold an MCP client may call; a request whose gold is an operation that is not
exposed (HTTP only) counts in ``withheld_named`` instead: how often that operation is the best
of all that are ranked, which is what the registry names as ``withheld``;
plus index build time and median / p95 query latency. Rows that carry ``asks_delete``
(our own catalog) add ``destructive_first``: how many requests that do not ask to delete
get an operation annotated destructive first; a row with empty gold (an operation that is
not exposed) counts only there. ``--semantic`` adds the local
embedding model (needs the ``semantic`` extra; build time then includes embedding
every capability).

``--cv`` (with ``--semantic``) checks the fusion parameters instead of assuming them:
leave-one-spec-out cross-validation over :data:`FUSION_GRID` (semantic weight x lexical
floor, see ``semantic.fuse``). For each spec, the pair with the best MRR on the other
specs' queries (ties: grid order) ranks that spec's queries; the metrics of those
held-out rankings are the CV estimate, printed with the pair each fold chose. Embeddings
are computed once and shared by every grid point.

``--ablate NAME`` (repeatable) ranks with that component switched off (:data:`COMPONENTS`:
a BM25F field, the API prior, word pairs, a request rule, safety), a real
:class:`Ranking` of the index, not a patch; ``evals/ablation.py`` runs them all.

``--results`` rewrites this run's section of ``evals/RESULTS.md`` (see ``results.py``),
named after the queries' folder (``toolalpaca``, ``toolbench``; ``own_catalog-blind`` for a
folder's second set) and the options.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "evals")]

from memory_bank_codegen.catalog_builder import build_catalogs  # noqa: E402
from memory_bank_codegen.loader import load_spec  # noqa: E402
from memory_bank.capabilities.ranking.fields import FIELD_WEIGHTS  # noqa: E402
from memory_bank.capabilities.registry import competes, exposed  # noqa: E402
from memory_bank.capabilities.ranking.search import CapabilitySearch, Ranking  # noqa: E402
from memory_bank.textsearch.embeddings import Embedder, load_embedder  # noqa: E402
from results import add_results_option, table, write_section  # noqa: E402

#: A ranker: query -> ranked ``(source, "METHOD /path")`` keys, best first.
Ranker = Callable[[str, int], list[tuple[str, str]]]

#: ``--cv``: (semantic weight, lexical floor) pairs tried by leave-one-spec-out CV.
FUSION_GRID = [(weight, floor) for weight in (0.2, 0.3, 0.4, 0.5) for floor in (0.0, 0.05, 0.1, 0.15, 0.2)]


#: Components other than the BM25F fields, and what switching each off sets in :class:`Ranking`.
SWITCHES: Mapping[str, Mapping[str, Any]] = {
    "api_prior": {"api_weight": 0.0},
    "example_requests": {"example_weight": 0.0},
    "word_pairs": {"word_pairs": False},
    "question_fallback": {"fallback_weight": 0.0},
    "request_steps": {"request_steps": False},
    "safety": {"safety": False},
    "example_intents": {"example_intents": False},
    "value_shapes": {"value_shapes": False},
    "opening_word": {"opening_word": False},
    "semantic_intents": {"semantic_intents": False},
    "exact_name": {"exact_name": False},
    "spelling": {"spelling": False},
}
#: Every name ``--ablate`` takes: each BM25F field, then each switch.
COMPONENTS = (*FIELD_WEIGHTS, *SWITCHES)


def ablated(names: Sequence[str], base: Ranking | None = None) -> Ranking:
    """``base`` (the shipped ranking by default) with each of ``names`` switched off."""
    ranking = base or Ranking()
    for name in names:
        if name in ranking.field_weights:
            ranking = replace(ranking, field_weights={**ranking.field_weights, name: 0.0})
        elif name in SWITCHES:
            ranking = replace(ranking, **SWITCHES[name])
        else:
            raise ValueError(f"no component {name!r}; one of {', '.join(COMPONENTS)}")
    return ranking


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
            final = row.get("gold_final") or (gold[-1] if gold else "")  # no gold: nothing should look sure
            queries.append(Query(row["id"], row["spec"], row["query"], frozenset(gold), final))
    return queries


def load_catalog(specs_root: Path, spec_names: Sequence[str]) -> list[dict[str, Any]]:
    """The operations of the named specs as one registry (the server's code path): all of a
    vendor spec exposed; a spec that says which are (``x-capability.expose``) keeps its flags,
    and of what it does not expose, what the registry ranks (``registry.competes``)."""
    every = build_catalogs([(name, load_spec(specs_root / name)) for name in spec_names], default_expose=True, every=True)
    return [c for c in every if competes(c)]


def source_name(queries: Path) -> str:
    """A results section's name for a query file: its folder (``toolbench``), and the file's
    own name when a folder holds several sets (``own_catalog-blind`` for ``blind_requests.jsonl``)."""
    stem = queries.stem.removesuffix("_requests")
    return queries.parent.name if stem in ("queries", "requests") else f"{queries.parent.name}-{stem}"


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


def query_metrics(query: Query, ranked: Sequence[tuple[str, str]], *, k: int = 5) -> dict[str, float]:
    """hit@1, hit@k, final@1, final@k and reciprocal rank of one query's ranking (1.0 = yes)."""
    keys = [key if source == query.spec else None for source, key in ranked]  # other specs: misses
    first = next((i for i, key in enumerate(keys) if key in query.gold), None)
    final = next((i for i, key in enumerate(keys) if key == query.gold_final), None)
    return {
        "hit@1": float(first == 0),
        "hit@3": float(first is not None and first < 3),
        f"hit@{k}": float(first is not None and first < k),
        "final@1": float(final == 0),
        f"final@{k}": float(final is not None and final < k),
        "mrr": 1 / (first + 1) if first is not None else 0.0,
    }


def mean_metrics(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The per-metric mean of per-query rows, rounded to 4 places."""
    n = max(1, len(rows))
    return {name: round(sum(row[name] for row in rows) / n, 4) for name in (rows[0] if rows else {})}


def evaluate(queries: Sequence[Query], rank: Ranker, *, k: int = 5) -> dict[str, float]:
    """Quality metrics and per-query latency (ms) of ``rank`` over ``queries``."""
    rows, latencies = [], []
    for query in queries:
        started = time.perf_counter()
        ranked = rank(query.text, max(k, 10))
        latencies.append((time.perf_counter() - started) * 1000)
        rows.append(query_metrics(query, ranked, k=k))
    return mean_metrics(rows) | latency_summary(latencies)


def asks_delete(path: Path) -> dict[str, bool]:
    """Query id -> whether the request asks to remove something (the optional ``asks_delete`` field)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {row["id"]: bool(row["asks_delete"]) for row in rows if "asks_delete" in row}


def safety(
    queries: Sequence[Query], deletes: Mapping[str, bool], catalog: Sequence[Mapping[str, Any]], rank: Ranker
) -> dict[str, int]:
    """How often an operation annotated destructive comes first for a request that does not ask
    to delete (the target is never), and how many requests had no gold at all."""
    destructive = {op_key(c) for c in catalog if (c.get("annotations") or {}).get("destructiveHint")}
    firsts = [rank(q.text, 1)[:1] for q in queries if not deletes[q.id]]
    return {"non_delete_requests": len(firsts), "destructive_first": sum(1 for first in firsts if set(first) & destructive)}


def caching(embedder: Embedder) -> Embedder:
    """``embedder`` with a text -> vector cache, so many indexes over one catalog embed it once."""
    import numpy as np

    cache: dict[str, Any] = {}

    def embed(texts: Sequence[str]) -> Any:
        missing = [text for text in dict.fromkeys(texts) if text not in cache]
        if missing:
            cache.update(zip(missing, embedder(missing)))
        return np.stack([cache[text] for text in texts])

    return embed


def cross_validate(
    queries: Sequence[Query], catalog: Sequence[Mapping[str, Any]], embedder: Embedder, *, k: int = 5
) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
    """Leave-one-spec-out CV of the fusion parameters over :data:`FUSION_GRID`: the held-out
    metrics, and the (weight, floor) each held-out spec was ranked with."""
    embed = caching(embedder)
    rows = {}
    for weight, floor in FUSION_GRID:
        rank = index_ranker(CapabilitySearch(catalog, embedder=embed, semantic_weight=weight, lexical_floor=floor))
        rows[(weight, floor)] = [query_metrics(query, rank(query.text, max(k, 10)), k=k) for query in queries]
    held_out: list[dict[str, float]] = []
    chosen = {}
    for spec in sorted({q.spec for q in queries}):
        train = [i for i, q in enumerate(queries) if q.spec != spec]
        best = max(FUSION_GRID, key=lambda pair: sum(rows[pair][i]["mrr"] for i in train))
        chosen[spec] = best
        held_out += [rows[best][i] for i, q in enumerate(queries) if q.spec == spec]
    return mean_metrics(held_out), chosen


def index_ranker(index: CapabilitySearch) -> Ranker:
    """``index`` as a :data:`Ranker`."""
    return lambda text, limit: [op_key(m.capability) for m in index.search(text, limit=limit, accept=exposed)]


def memory_bank_ranker(
    catalog: Sequence[Mapping[str, Any]], embedder: Embedder | None = None, ranking: Ranking | None = None
) -> tuple[Ranker, float]:
    """Our ranker over ``catalog`` (as ``ranking`` says, shipped by default) and the time (ms)
    it took to build its index."""
    started = time.perf_counter()
    index = CapabilitySearch(catalog, embedder=embedder, ranking=ranking or Ranking())
    build_ms = (time.perf_counter() - started) * 1000
    return index_ranker(index), build_ms


def withheld_named(
    queries: Sequence[Query], catalog: Sequence[Mapping[str, Any]], embedder: Embedder | None, ranking: Ranking
) -> dict[str, float]:
    """For requests whose gold operation no MCP client may call (not exposed: HTTP only), how
    often the best of every ranked operation is it: what the registry names as ``withheld``."""
    index = CapabilitySearch(catalog, embedder=embedder, ranking=ranking)
    named = [query_metrics(q, [op_key(m.capability) for m in index.search(q.text, limit=1)], k=1)["hit@1"] for q in queries]
    return {"http_only": len(queries), "withheld_named": round(sum(named) / len(named), 4)}


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
    parser.add_argument("--also", action="append", default=[], metavar="SPEC", help="another spec (under --specs-root) ranked beside the queries' own, as the registry ranks every API a token uses")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    add_semantic_option(parser)
    parser.add_argument("--cv", action="store_true", help="leave-one-spec-out CV of the fusion parameters (needs --semantic)")
    parser.add_argument("--ablate", action="append", default=[], choices=COMPONENTS, metavar="NAME", help="switch a component off (repeatable): " + ", ".join(COMPONENTS))
    add_results_option(parser)
    args = parser.parse_args(argv)
    if args.cv and not args.semantic:
        parser.error("--cv cross-validates the semantic fusion: add --semantic")
    embedder = requested_embedder(parser, args)

    queries = read_queries(args.queries)
    catalog = load_catalog(args.specs_root, sorted({q.spec for q in queries} | set(args.also)))
    if args.cv and embedder is not None:
        metrics, chosen = cross_validate(queries, catalog, embedder, k=args.k)
        picks = {f"w={w} floor={f}": sum(1 for pair in chosen.values() if pair == (w, f)) for w, f in FUSION_GRID}
        result = {"queries": len(queries), "folds": len(chosen), "cv": "leave-one-spec-out", **metrics}
        chosen_pairs = {pair: n for pair, n in picks.items() if n}
        report(result | {"chosen": chosen_pairs}, as_json=args.json)
        if args.results:
            body = table([result]) + "\n\nFolds per chosen pair: " + ", ".join(f"{p}: {n}" for p, n in chosen_pairs.items())
            write_section(args.results, f"{source_name(args.queries)}-cv", f"Capability search, {source_name(args.queries)}: fusion CV", body)
        return 0
    rank, build_ms = memory_bank_ranker(catalog, embedder, ablated(args.ablate))
    operations = sum(1 for c in catalog if exposed(c))
    result = {"queries": len(queries), "operations": operations, "semantic": args.semantic, "build_ms": round(build_ms, 2)}
    result |= {"ablated": ",".join(args.ablate)} if args.ablate else {}
    withheld_ops = {op_key(c) for c in catalog if not exposed(c)}
    http_only = [q for q in queries if q.gold and all((q.spec, gold) in withheld_ops for gold in q.gold)]
    result |= evaluate([q for q in queries if q.gold and q not in http_only], rank, k=args.k)
    if http_only:
        result |= withheld_named(http_only, catalog, embedder, ablated(args.ablate))
    deletes = asks_delete(args.queries)
    if deletes:
        result |= safety(queries, deletes, catalog, rank) | {"no_gold": sum(1 for q in queries if not q.gold)}
    report(result, as_json=args.json)
    if args.results:
        name = source_name(args.queries) + "".join(f"+{Path(a).stem}" for a in args.also)
        name += ("-semantic" if args.semantic else "") + "".join(f"-no-{a}" for a in args.ablate)
        title = f"Capability search, {source_name(args.queries)}, {'lexical + semantic' if args.semantic else 'lexical'}"
        write_section(args.results, name, title, table([result]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
