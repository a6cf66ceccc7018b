"""The README stands on its own: two set-up commands, a pinned inspector line, the license it names."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SH_BLOCK = re.compile(r"```sh\n(.*?)```", re.DOTALL)


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def test_set_up_has_exactly_the_two_commands_a_fresh_machine_runs() -> None:
    assert SH_BLOCK.findall(section("Set up")) == [
        "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/memory-bank serve\n",
        'python3 -m venv .venv && .venv/bin/pip install -q -e ".[dev]" && .venv/bin/python -m pytest\n',
    ]


def test_the_inspector_is_pinned_and_runs_without_a_prompt() -> None:
    lines = [line for block in SH_BLOCK.findall(README) for line in block.splitlines() if "inspector" in line]
    assert lines and all("npx -y @modelcontextprotocol/inspector@2 " in line for line in lines)


def test_no_file_outside_the_project_is_cited_and_the_license_is_there() -> None:
    assert "DESIGN" not in README and "memory-bank[semantic]" not in README
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    assert declared == "Apache-2.0" and "Apache License\n" in (ROOT / "LICENSE").read_text()
    assert "Version 2.0, January 2004" in (ROOT / "LICENSE").read_text()
