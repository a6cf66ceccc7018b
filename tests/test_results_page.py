"""The harnesses' ``--results``: a run rewrites its own section of the page and nothing else."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "evals"))

from results import table, write_section  # noqa: E402


def test_a_run_replaces_its_section_and_keeps_the_rest(tmp_path: Path) -> None:
    page = tmp_path / "RESULTS.md"
    page.write_text("# Results\n\nprose\n<!-- results:a -->\nold figures\n<!-- /results:a -->\nmore prose\n")
    write_section(page, "a", "Run A", table([{"hit@1": 0.8, "mrr": 0.9}]))
    text = page.read_text()
    assert "old figures" not in text and text.startswith("# Results\n\nprose\n") and text.endswith("more prose\n")
    assert "### Run A" in text and "| hit@1 | mrr |\n|---|---|\n| 0.8 | 0.9 |" in text


def test_a_new_section_is_appended_with_how_to_redo_it(tmp_path: Path) -> None:
    page = tmp_path / "RESULTS.md"
    write_section(page, "b", "Run B", "figures", ["MEMORY_BANK_SEMANTIC_SEARCH=true"])
    write_section(page, "b", "Run B", "new figures")
    text = page.read_text()
    assert text.count("<!-- results:b -->") == 1 and "new figures" in text and "\nfigures" not in text
    assert text.rstrip().endswith("<!-- /results:b -->") and "python " in text
