"""The layers' dependencies point one way: what each package of ``src/memory_bank`` may not import.

Read from the source with ``ast`` (every ``import`` anywhere in a module, including
those inside functions), so a rule breaks here when the line is written, not when
someone notices a cycle. Besides the rules, no two areas may import each other.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "memory_bank"


def imported_modules(source: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"), str(source))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def area_sources(area: str) -> list[Path]:
    """The modules of ``area``: a package's, or the module itself."""
    root = PACKAGE / area
    return [root.with_suffix(".py")] if root.with_suffix(".py").is_file() else sorted(root.rglob("*.py"))


def violations(area: str, forbidden: tuple[str, ...]) -> list[str]:
    """``module -> import`` for each import under ``area`` (a package or a module) of a ``forbidden`` one."""
    sources = area_sources(area)
    assert sources, f"{area} has no modules"
    return [
        f"{source.relative_to(PACKAGE)} -> {module}"
        for source in sources
        for module in sorted(imported_modules(source))
        if any(module == name or module.startswith(name + ".") for name in forbidden)
    ]


HTTP = ("fastapi", "starlette")

RULES = [
    pytest.param("store", (*HTTP, "memory_bank.api", "memory_bank.handlers", "memory_bank.mcp"), id="store-no-http-or-upper-layers"),
    pytest.param("store", ("memory_bank.capabilities",), id="store-no-capabilities"),
    pytest.param(
        "textsearch",
        tuple(f"memory_bank.{area}" for area in ("store", "capabilities", "api", "handlers", "mcp", "security", "settings")),
        id="textsearch-below-both-searches",
    ),
    pytest.param("capabilities", ("memory_bank.mcp",), id="capabilities-no-mcp"),
    pytest.param("handlers", ("memory_bank.api", "memory_bank.mcp", "memory_bank.capabilities.execute"), id="handlers-below-the-edge"),
    pytest.param("reply", (*HTTP, "memory_bank.api"), id="reply-no-http"),
    pytest.param("api", ("memory_bank.mcp",), id="api-no-mcp"),
    pytest.param("errors", (*HTTP, "memory_bank.api"), id="errors-no-http"),
    pytest.param("transfer", (*HTTP, "memory_bank.api", "memory_bank.handlers"), id="transfer-no-edge"),
    pytest.param("security", ("sqlalchemy", "sqlmodel", "memory_bank.store.database"), id="security-no-sql"),
]


@pytest.mark.parametrize(("area", "forbidden"), RULES)
def test_an_area_does_not_import_what_it_must_not(area: str, forbidden: tuple[str, ...]) -> None:
    assert violations(area, forbidden) == []


def area_imports() -> dict[str, set[str]]:
    """Each area (a package or a top-level module, but ``generated``, written by the generator) and the areas it imports."""
    areas = {path.stem for path in PACKAGE.iterdir() if path.suffix == ".py" or (path / "__init__.py").is_file()}
    areas -= {"__init__", "generated"}
    imports: dict[str, set[str]] = {}
    for area in areas:
        modules = set().union(*(imported_modules(source) for source in area_sources(area)))
        imports[area] = {parts[1] for parts in (m.split(".") for m in modules) if parts[0] == "memory_bank" and len(parts) > 1} & areas - {area}
    return imports


def test_no_two_areas_import_each_other() -> None:
    imports = area_imports()
    assert sorted(f"{a} <-> {b}" for a in imports for b in imports[a] if a < b and a in imports[b]) == []
