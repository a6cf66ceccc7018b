"""The one page of current evaluation figures, ``evals/RESULTS.md``, kept by the harnesses.

Each harness run with ``--results`` rewrites its own section of the page: the lines between
``<!-- results:NAME -->`` and ``<!-- /results:NAME -->`` (appended at the end when the page
has no such section yet), with the command that reproduces it, the date, and its figures.
Everything outside the markers is left as it is, so the page's own prose stays.
"""

from __future__ import annotations

import argparse
import datetime
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def add_results_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--results", nargs="?", type=Path, const=RESULTS, metavar="FILE",
        help=f"rewrite this run's section of the results page (default {RESULTS.name} beside this harness)",
    )  # fmt: skip


def table(rows: Sequence[Mapping[str, Any]]) -> str:
    """A Markdown table of ``rows`` (dicts with the same keys), columns in the first row's order."""
    columns = list(rows[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(row.get(c, "")) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def command(environment: Sequence[str] = ()) -> str:
    """How this run was started, relative to the checkout, so the section says how to redo it;
    ``environment``: the ``NAME=value`` settings the run depends on."""
    root = Path(__file__).resolve().parents[1]
    script = Path(sys.argv[0]).resolve()
    shown = script.relative_to(root) if script.is_relative_to(root) else script
    return " ".join([*environment, "python", str(shown), *map(shlex.quote, sys.argv[1:])])


def write_section(page: Path, name: str, title: str, body: str, environment: Sequence[str] = ()) -> None:
    """Replace (or append) section ``name`` of ``page`` with ``title``, how it was made, and ``body``."""
    start, end = f"<!-- results:{name} -->", f"<!-- /results:{name} -->"
    made = f"`{command(environment)}` ({datetime.date.today().isoformat()})"
    section = f"{start}\n### {title}\n\n{made}\n\n{body.strip()}\n{end}"
    text = page.read_text(encoding="utf-8") if page.exists() else "# Evaluation results\n"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _: section, text)
    else:
        text = text.rstrip("\n") + f"\n\n{section}\n"
    page.write_text(text, encoding="utf-8")
