"""Our capability search next to FastMCP's BM25 tool-search transform, same specs, same queries.

    python bench/capability_search_vs_fastmcp.py [--queries FILE.jsonl] [--specs-root DIR] [--k 5] [--json] [--semantic] [--results [FILE]]
    python bench/capability_search_vs_fastmcp.py --per-spec [--queries ...] [--specs-root ...] [--semantic]

Defaults to ../shared/evals/toolalpaca; our own catalog is ``--queries
evals/own_catalog/requests.jsonl --specs-root openapi`` (only the exposed operations, for
every ranker; requests without gold count only for ``destructive_first``). Three rankers,
one run, one table:

* ``memory-bank`` - ``CapabilitySearch`` over the codegen catalog (as the eval harness);
  with ``--semantic`` also ``memory-bank+semantic`` (needs the ``semantic`` extra).
* ``fastmcp/catalog`` - FastMCP's BM25 index (``fastmcp.server.transforms.search.bm25._BM25Index``,
  the ranking inside ``BM25SearchTransform``) over fastmcp ``Tool``s made from the SAME
  catalog entries with the same text: name; description = title, description, tags,
  ``METHOD /path`` and the response's field names and descriptions; parameters flattened
  to the top level (as fastmcp's own OpenAPI tools have them) with their descriptions.
  Only the ranking differs.
* ``fastmcp/openapi`` - the same BM25 index over the tools fastmcp's own OpenAPI integration
  (``OpenAPIProvider``) makes from each spec: fastmcp's names, descriptions and parameters.

``--per-spec`` ranks each spec's requests over that spec alone (as a server holding one
vendor's API would) with ``memory-bank`` (or ``memory-bank+semantic``) and ``fastmcp/catalog``,
and lists the specs where ours is behind on any metric (hit@1, hit@k, final@1, MRR), with
how many specs there are and the mean over specs of each metric for both.

Documents go through fastmcp's own ``_extract_searchable_text``; we call the index
directly (what ``BM25SearchTransform._search`` does after its cache check) so that
index build and query latency are measured the same way for every ranker.

fastmcp (the ``bench`` extra) requires ``mcp>=2.3,<3``, which agrees with the project's
``mcp>=2.3`` pin, so it installs into the project venv and runs in this process:
``pip install -e ".[bench]"``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "evals"), str(ROOT / "src")]

import httpx2  # noqa: E402
from capability_search import (  # noqa: E402
    Query,
    Ranker,
    add_semantic_option,
    asks_delete,
    evaluate,
    load_catalog,
    memory_bank_ranker,
    op_key,
    read_queries,
    requested_embedder,
    safety,
    source_name,
)
from fastmcp.server.providers.openapi import OpenAPIProvider  # noqa: E402
from fastmcp.server.transforms.search.base import _extract_searchable_text  # noqa: E402
from fastmcp.server.transforms.search.bm25 import _BM25Index  # noqa: E402
from fastmcp.tools.base import Tool  # noqa: E402
from results import add_results_option, table, write_section  # noqa: E402

from memory_bank.capabilities.ranking.fields import response_words  # noqa: E402
from memory_bank.capabilities.registry import exposed  # noqa: E402
from memory_bank.textsearch.embeddings import Embedder  # noqa: E402
from memory_bank_codegen.loader import load_spec  # noqa: E402

DEFAULT_ROOT = ROOT.parent / "shared" / "evals" / "toolalpaca"


def _fastmcp_ranker(documents: Sequence[str], keys: Sequence[tuple[str, str]]) -> tuple[Ranker, float]:
    """FastMCP's BM25 over ``documents``; results mapped to ``keys``; plus build time (ms)."""
    started = time.perf_counter()
    index = _BM25Index()
    index.build(list(documents))
    build_ms = (time.perf_counter() - started) * 1000
    return (lambda text, limit: [keys[i] for i in index.query(text, limit)]), build_ms


def _flat_parameters(capability: Mapping[str, Any]) -> dict[str, Any]:
    """path/query/header/body groups merged into one properties map, as fastmcp tools have them."""
    merged: dict[str, Any] = {}
    for group in (capability["inputSchema"].get("properties") or {}).values():
        if isinstance(group, Mapping):
            merged |= group.get("properties") or {}
    return {"type": "object", "properties": merged}


def _catalog_tool(capability: Mapping[str, Any]) -> Tool:
    """A fastmcp Tool carrying the same words our index sees for ``capability``."""
    description = "\n".join(
        [
            capability["title"],
            capability["description"],
            " ".join(capability["tags"]),
            f"{capability['method']} {capability['path']}",
            " ".join(response_words(capability)),
        ]
    )
    return Tool(name=capability["name"], description=description, parameters=_flat_parameters(capability))


def fastmcp_catalog_ranker(catalog: Sequence[Mapping[str, Any]]) -> tuple[Ranker, float]:
    documents = [_extract_searchable_text(_catalog_tool(c)) for c in catalog]
    return _fastmcp_ranker(documents, [op_key(c) for c in catalog])


def fastmcp_openapi_ranker(specs_root: Path, spec_names: Sequence[str], exposed: set[tuple[str, str]]) -> tuple[Ranker, float]:
    """Tools from fastmcp's OpenAPI integration, one provider per spec, pooled in one index;
    only the ``exposed`` operations, as the server offers them."""
    documents, keys = [], []
    client = httpx2.AsyncClient(base_url="http://127.0.0.1")  # never called: tools are only ranked
    for name in spec_names:
        provider = OpenAPIProvider(load_spec(specs_root / name), client=client)
        for tool in asyncio.run(provider.list_tools()):
            route = tool._route
            key = (name, f"{route.method.upper()} {route.path}")
            if key in exposed:
                documents.append(_extract_searchable_text(tool))
                keys.append(key)
    return _fastmcp_ranker(documents, keys)


PER_SPEC_METRICS = ("hit@1", "hit@{k}", "final@1", "mrr")


def per_spec(specs_root: Path, queries: Sequence[Query], k: int, embedder: Embedder | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per spec, over that spec alone: the specs where ours is behind FastMCP's BM25 on some
    metric (a row each: both rankers' figures), and per ranker the mean over specs of each
    metric (ours with how many specs it is behind on)."""
    metrics = [m.format(k=k) for m in PER_SPEC_METRICS]
    ours_name = "memory-bank+semantic" if embedder else "memory-bank"
    behind, means = [], {name: {m: 0.0 for m in metrics} for name in (ours_name, "fastmcp")}
    specs = sorted({q.spec for q in queries if q.gold})
    for spec in specs:
        graded = [q for q in queries if q.gold and q.spec == spec]
        catalog = load_catalog(specs_root, [spec])
        ours = evaluate(graded, memory_bank_ranker(catalog, embedder)[0], k=k)
        theirs = evaluate(graded, fastmcp_catalog_ranker([c for c in catalog if exposed(c)])[0], k=k)
        for name, figures in ((ours_name, ours), ("fastmcp", theirs)):
            for m in metrics:
                means[name][m] += figures[m] / len(specs)
        if any(ours[m] < theirs[m] for m in metrics):
            behind.append({"spec": spec, "queries": len(graded), **{f"{m} ours/theirs": f"{ours[m]:.2f}/{theirs[m]:.2f}" for m in metrics}})
    totals = [
        {"ranker": name, "specs": len(specs), "behind_on_some_metric": len(behind) if name == ours_name else "", **{
            f"mean {m}": round(value, 4) for m, value in row.items()
        }}
        for name, row in means.items()
    ]  # fmt: skip
    return behind, totals


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=Path, default=DEFAULT_ROOT / "queries.jsonl")
    parser.add_argument("--specs-root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--per-spec", action="store_true", help="each spec alone: where ours is behind FastMCP's BM25")
    add_semantic_option(parser)
    add_results_option(parser)
    args = parser.parse_args(argv)
    embedder = requested_embedder(parser, args)

    queries = read_queries(args.queries)
    if args.per_spec:
        behind, totals = per_spec(args.specs_root, queries, args.k, embedder)
        if args.results:
            source = source_name(args.queries) + ("-semantic" if embedder else "")
            body = table(totals) + ("\n\nBehind on some metric:\n\n" + table(behind) if behind else "")
            write_section(args.results, f"{source}-per-spec", f"Capability search, {source}, each spec alone: ours beside FastMCP's BM25", body)
        if args.json:
            print(json.dumps({"behind": behind, "totals": totals}))
            return 0
        print(table(totals))
        print(table(behind) if behind else "behind on no spec")
        return 0
    spec_names = sorted({q.spec for q in queries})
    catalog = load_catalog(args.specs_root, spec_names)
    tools = [c for c in catalog if exposed(c)]  # what FastMCP is given: the tools a client sees
    rankers = {
        "memory-bank": memory_bank_ranker(catalog),
        **({"memory-bank+semantic": memory_bank_ranker(catalog, embedder)} if embedder else {}),
        "fastmcp/catalog": fastmcp_catalog_ranker(tools),
        "fastmcp/openapi": fastmcp_openapi_ranker(args.specs_root, spec_names, {op_key(c) for c in tools}),
    }
    graded, deletes = [q for q in queries if q.gold], asks_delete(args.queries)
    rows = {
        name: {"build_ms": round(build_ms, 2)}
        | evaluate(graded, rank, k=args.k)
        | (safety(queries, deletes, catalog, rank) if deletes else {})
        for name, (rank, build_ms) in rankers.items()
    }
    if args.results:
        source = source_name(args.queries)
        body = table([{"ranker": name, **row} for name, row in rows.items()])
        write_section(args.results, f"{source}-vs-fastmcp", f"Capability search, {source}: ours beside FastMCP's BM25, same catalog", body)
    if args.json:
        print(json.dumps({"queries": len(graded), "operations": len(catalog), "rankers": rows}))
        return 0
    columns = list(next(iter(rows.values())))
    print(f"{len(graded)} queries, {len(catalog)} operations, k={args.k}")
    print(f"{'ranker':<22}" + "".join(f"{c:>16}" for c in columns))
    for name, row in rows.items():
        print(f"{name:<22}" + "".join(f"{row[c]:>16}" for c in columns))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
