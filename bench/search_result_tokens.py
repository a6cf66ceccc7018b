"""What a ``search_capabilities`` result costs an agent's context, in tokens (characters / 4).

    python bench/search_result_tokens.py [--limit 5] [--json]

Runs the own-catalog requests through the real MCP endpoint of an app on a throwaway
SQLite file and measures each result as the client receives it: the text block, the
structured content, and the whole ``result`` object. Characters / 4 is the usual
estimate for English and JSON with a BPE tokenizer; it is the same rule before and after
a change, which is what the figure is for.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "evals"), str(ROOT / "src"), str(ROOT / "tests")]

from capability_search import read_queries, report  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from memory_bank.app import create_app  # noqa: E402
from memory_bank.settings import Settings  # noqa: E402
from support.mcp_live import call_tool  # noqa: E402

REQUESTS = ROOT / "evals" / "own_catalog" / "requests.jsonl"


def tokens(value: object) -> int:
    """Characters / 4 of ``value`` (a string as is, anything else as compact JSON)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return len(text) // 4


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=5, help="cards per result (the tool's default, 5)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        app = create_app(Settings(database_url=f"sqlite:///{folder}/tokens.db"))
        token, _ = app.state.tokens.create("bench", "ann", "agent", ["memory:read", "memory:write"])
        with TestClient(app, base_url="http://127.0.0.1") as client:
            results = [call_tool(client, token, "search_capabilities", {"query": q.text, "limit": args.limit}) for q in read_queries(REQUESTS)]
        app.state.engine.dispose()
    texts = [tokens("".join(block["text"] for block in r["content"] if block["type"] == "text")) for r in results]
    structured = [tokens(r["structuredContent"]) for r in results]
    whole = [tokens(r) for r in results]
    report({
        "requests": len(results),
        "limit": args.limit,
        "text_tokens_median": statistics.median(texts),
        "structured_tokens_median": statistics.median(structured),
        "result_tokens_median": statistics.median(whole),
        "result_tokens_max": max(whole),
    }, as_json=args.json)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
