"""How long the generator takes on real vendor specs: all 55 Twilio specs (1,447 operations).

    python bench/codegen_twilio.py [--specs-root DIR] [--repeat N]

Times each stage separately, best of N runs, so a regression shows where it is:
loading (JSON parsing), building the pooled catalog (ref resolution, JSON Schema
conversion, naming and cross-spec collision handling) and rendering ``catalog.json``.
Also renders the memory spec's whole package as the same-run baseline.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from memory_bank_codegen.catalog_builder import build_catalogs  # noqa: E402
from memory_bank_codegen.cli import render_package  # noqa: E402
from memory_bank_codegen.loader import load_spec  # noqa: E402
from memory_bank_codegen.render_data import render_catalog  # noqa: E402

T = TypeVar("T")
DEFAULT_ROOT = ROOT.parent / "shared" / "evals" / "large-specs" / "twilio"


def best_of(repeat: int, work: Callable[[], T]) -> tuple[float, T]:
    """Fastest wall time of ``repeat`` runs (the least disturbed by the machine) and the result."""
    timings = []
    result: T
    for _ in range(repeat):
        start = time.perf_counter()
        result = work()
        timings.append(time.perf_counter() - start)
    return min(timings), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs-root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    paths = sorted(args.specs_root.glob("*.json"))
    if not paths:
        sys.exit(f"no specs under {args.specs_root}")

    load_s, specs = best_of(args.repeat, lambda: [(p.stem, load_spec(p)) for p in paths])
    build_s, capabilities = best_of(args.repeat, lambda: build_catalogs(specs, default_expose=True))
    render_s, text = best_of(args.repeat, lambda: render_catalog(capabilities))
    memory_s, _ = best_of(args.repeat, lambda: render_package(ROOT / "openapi" / "memory.yaml", "openapi/memory.yaml"))

    renamed = sum(1 for c in capabilities if "__" in c["name"])
    print(f"specs                 {len(paths)}")
    print(f"capabilities          {len(capabilities)} ({renamed} renamed for cross-spec collisions)")
    print(f"load specs            {load_s * 1000:8.1f} ms")
    print(f"build catalogs        {build_s * 1000:8.1f} ms")
    print(f"render catalog.json   {render_s * 1000:8.1f} ms ({len(text) / 1e6:.1f} MB of JSON)")
    print(f"total                 {(load_s + build_s + render_s) * 1000:8.1f} ms")
    print(f"memory spec, whole package (baseline): {memory_s * 1000:.1f} ms")


if __name__ == "__main__":
    main()
