"""Every way a spec can be unusable ends in a named refusal: the operation, the rule, exit 2.

Each case is the repository's spec with one thing broken, run through the real command,
so a regression shows as a hang, a traceback or a silent success here, not in CI logs.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from memory_bank_codegen.cli import SpecSource, cli, render_package
from memory_bank_codegen.loader import load_spec

SPEC = Path(__file__).resolve().parents[1] / "openapi" / "memory.yaml"
Spec = dict[str, Any]


def _write(spec: Spec, folder: Path) -> Path:
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def _edited(mutate: Callable[[Spec], None]) -> Spec:
    spec = copy.deepcopy(load_spec(SPEC))
    mutate(spec)
    return spec


def _parameter_cycle(spec: Spec) -> None:
    spec["components"]["parameters"]["Loop"] = {"$ref": "#/components/parameters/Loop2"}
    spec["components"]["parameters"]["Loop2"] = {"$ref": "#/components/parameters/Loop"}
    spec["paths"]["/v1/memory"]["get"]["parameters"].append({"$ref": "#/components/parameters/Loop"})


def _schema_cycle(spec: Spec) -> None:
    spec["components"]["schemas"]["Loop"] = {"$ref": "#/components/schemas/Loop2"}
    spec["components"]["schemas"]["Loop2"] = {"$ref": "#/components/schemas/Loop"}
    spec["components"]["schemas"]["MemoryCreate"]["properties"]["loop"] = {"$ref": "#/components/schemas/Loop"}


def _missing_ref(spec: Spec) -> None:
    spec["components"]["schemas"]["MemoryCreate"]["properties"]["gone"] = {"$ref": "#/components/schemas/Gone"}


def _no_success_response(spec: Spec) -> None:
    responses = spec["paths"]["/v1/memory"]["get"]["responses"]
    for status in [s for s in responses if s.startswith("2")]:
        del responses[status]


def _too_few_examples(spec: Spec) -> None:
    declared = spec["paths"]["/v1/memory"]["get"]["x-capability"]
    declared["examples"] = declared["examples"][:3] + [declared["examples"][0].upper()]  # a repeat is no new wording


def _not_openapi(spec: Spec) -> None:
    del spec["paths"]["/v1/memory"]["get"]["responses"]["401"]["$ref"]  # a response needs a description


@pytest.mark.parametrize(
    ("mutate", "named"),
    [
        (
            _parameter_cycle,
            "listMemories: ref-cycle: #/components/parameters/Loop -> #/components/parameters/Loop2"
            " -> #/components/parameters/Loop",
        ),
        (
            _schema_cycle,
            "postMemory: ref-cycle: #/components/schemas/Loop -> #/components/schemas/Loop2"
            " -> #/components/schemas/Loop",
        ),
        (_missing_ref, "postMemory: ref-missing: #/components/schemas/Gone names nothing in this document"),
        (_no_success_response, "listMemories: success-response: declare a 2xx response"),
        (_too_few_examples, "listMemories: x-capability-examples-count: an exposed operation needs at least 5 distinct"),
        (_not_openapi, "listMemories: openapi-spec: at /paths/~1v1~1memory/get/responses/401: \"description\" is a required"),
    ],
    ids=["parameter-ref-cycle", "schema-ref-cycle", "missing-ref", "no-2xx-response", "too-few-examples", "not-openapi"],
)
def test_a_bad_spec_is_refused_by_operation_and_rule(tmp_path: Path, mutate: Callable[[Spec], None], named: str) -> None:
    spec = _write(_edited(mutate), tmp_path)
    result = CliRunner().invoke(cli, ["--spec", str(spec), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert named in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()


def test_the_document_as_a_whole_is_validated_too(tmp_path: Path) -> None:
    spec = _write(_edited(lambda s: s["info"].pop("version")), tmp_path)
    result = CliRunner().invoke(cli, ["--check", "--spec", str(spec), "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert 'spec: openapi-spec: at /info: "version" is a required property' in result.stderr


def _module(name: str, source: str, folder: Path) -> Any:
    path = folder / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    loaded = importlib.util.spec_from_file_location(name, path)
    assert loaded is not None and loaded.loader is not None
    module = importlib.util.module_from_spec(loaded)
    sys.modules[name] = module
    loaded.loader.exec_module(module)
    return module


def test_a_property_that_is_no_python_name_gets_an_alias(tmp_path: Path) -> None:
    def add(spec: Spec) -> None:
        spec["components"]["schemas"]["ImportResult"]["properties"]["skipped-count"] = {
            "type": "integer",
            "minimum": 0,
        }

    models = _module("bad_spec_models", render_package([SpecSource(_write(_edited(add), tmp_path), "spec.yaml")])["models.py"], tmp_path)
    result = models.ImportResult.model_validate_json('{"imported": 1, "skipped": 0, "skipped-count": 2}', strict=True)
    assert result.skipped_count == 2
    assert models.ImportResult(imported=1, skipped=0, skipped_count=3).model_dump(mode="json")["skipped-count"] == 3


def test_a_path_item_ref_is_a_route_and_a_tool(tmp_path: Path) -> None:
    path = "/v1/memory/{memory_id}/history"

    def move(spec: Spec) -> None:
        spec["components"]["pathItems"] = {"History": spec["paths"][path]}
        spec["paths"][path] = {"$ref": "#/components/pathItems/History"}

    rendered = render_package([SpecSource(_write(_edited(move), tmp_path), "spec.yaml")])
    operation_id = load_spec(SPEC)["paths"][path]["get"]["operationId"]
    assert f'@router.get("{path}",operation_id="{operation_id}"' in "".join(rendered["spec_routes.py"].split())
    assert operation_id in [capability["name"] for capability in json.loads(rendered["catalog.json"])["capabilities"]]


ADMIN = SPEC.parent / "admin.yaml"


def _second_spec(folder: Path, mutate: Callable[[Spec], None]) -> Path:
    spec = copy.deepcopy(load_spec(ADMIN))
    mutate(spec)
    path = folder / "second.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def _reuse_operation_id(spec: Spec) -> None:
    spec["paths"]["/v1/admin/tokens"]["get"]["operationId"] = "listMemories"


def _reuse_path(spec: Spec) -> None:
    spec["paths"]["/v1/memory"] = spec["paths"].pop("/v1/admin/agents")


def _redefine_problem(spec: Spec) -> None:
    spec["components"]["schemas"]["Problem"]["required"] = ["type"]


@pytest.mark.parametrize(
    ("mutate", "named"),
    [
        (_reuse_operation_id, "listMemories: unique-operation-id: defined in {first} and in {second}"),
        (_reuse_path, "/v1/memory: unique-path: served by {first} and by {second}"),
        (_redefine_problem, "spec: unique-component: components/schemas/Problem means one thing in {first} and another in {second}"),
    ],
    ids=["operation-id", "path", "component"],
)
def test_names_are_unique_across_specs(tmp_path: Path, mutate: Callable[[Spec], None], named: str) -> None:
    first, second = _write(_edited(lambda s: None), tmp_path), _second_spec(tmp_path, mutate)
    result = CliRunner().invoke(cli, ["--spec", str(first), "--spec", str(second), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert named.format(first=first, second=second) in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()


def test_each_spec_gets_its_own_interface_and_router_and_shares_models_catalog_and_spec() -> None:
    rendered = render_package([SpecSource(SPEC, "openapi/memory.yaml"), SpecSource(ADMIN, "openapi/admin.yaml")])
    assert {"memory_interface.py", "memory_routes.py", "admin_interface.py", "admin_routes.py"} <= rendered.keys()
    assert "class MemoryBankAdminApi(Protocol)" in rendered["admin_interface.py"]
    assert "listTokens" in rendered["admin_routes.py"] and "listTokens" not in rendered["memory_routes.py"]
    served = json.loads(rendered["spec.json"])
    assert served["info"]["title"] == "Memory Bank" and {"/v1/memory", "/v1/admin/tokens"} <= served["paths"].keys()
    sources = {c["name"]: c["source"] for c in json.loads(rendered["catalog.json"])["capabilities"]}
    assert sources["listTokens"] == "openapi/admin.yaml" and sources["getMemory"] == "openapi/memory.yaml"


def test_two_specs_of_one_file_name_are_refused_before_one_overwrites_the_other(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    first, second = _write(_edited(lambda s: None), tmp_path), _second_spec(tmp_path / "b", lambda s: None).rename(tmp_path / "b" / "spec.yaml")
    result = CliRunner().invoke(cli, ["--spec", str(first), "--spec", str(second), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "spec: unique-module: two specs would write the same modules" in result.stderr
