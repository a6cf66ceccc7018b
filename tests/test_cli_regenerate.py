"""``regenerate-tools`` says what changed per operation, against the spec the committed code came from."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from memory_bank_codegen.changes import compare
from memory_bank_codegen.cli import cli
from memory_bank_codegen.loader import load_spec

SPEC = Path(__file__).resolve().parent.parent / "openapi" / "memory.yaml"


def regenerate(spec: dict[str, Any], folder: Path, out: Path) -> list[str]:
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    result = CliRunner().invoke(cli, ["--spec", str(path), "--out", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def test_regenerating_reports_added_removed_and_changed_operations(tmp_path: Path) -> None:
    original = load_spec(SPEC)
    out = tmp_path / "generated"
    first = regenerate(original, tmp_path, out)
    assert f"+ {'getMemorySearch'}" in " ".join(first)  # a first generation adds everything

    edited = copy.deepcopy(original)
    del edited["paths"]["/v1/memory/{memory_id}/feedback"]
    edited["paths"]["/v1/memory/search"]["get"]["summary"] = "Recall memories by relevance"
    edited["components"]["schemas"]["Tag"]["maxLength"] = 48  # shared: every operation using a Tag changes
    edited["paths"]["/v1/memory/count"] = {"get": copy.deepcopy(original["paths"]["/v1/memory"]["get"])}
    edited["paths"]["/v1/memory/count"]["get"]["operationId"] = "countMemories"

    lines = regenerate(edited, tmp_path, out)
    changed = compare(original, edited).changed  # every operation that uses a Tag: however many the spec has
    assert lines[1] == f"operations: 1 added, 1 removed, {len(changed)} changed"
    assert "  + countMemories" in lines and "  - postMemoryFeedback" in lines
    assert "  ~ getMemorySearch: summary, parameters" in lines
    assert "  ~ postMemory: requestBody" in lines and "  ~ listMemories: parameters" in lines

    again = regenerate(edited, tmp_path, out)
    assert again == [f"{out} was already up to date", "operations: none added, removed or changed"]


def test_a_cyclic_schema_is_compared_without_recursing_forever() -> None:
    spec = load_spec(SPEC)
    cyclic = copy.deepcopy(spec)
    cyclic["components"]["schemas"]["Context"]["properties"]["parent"] = {"$ref": "#/components/schemas/Context"}
    assert "requestBody" in compare(spec, cyclic).changed["postMemory"]
