"""Spec fuzzing: schemathesis drives every operation of the handwritten spec against the real app.

Each operation is fuzzed with schema-valid input (it must be accepted, or refused with a
status the spec documents) and schema-violating input (it must be refused with a 4xx),
carrying a valid bearer token. Every response must conform to the spec: no 5xx, only
declared status codes, content types and headers, bodies that validate against their
schemas. ``MEMORY_BANK_TEST_FUZZ_EXAMPLES`` (default 25 per operation and mode) keeps CI fast;
raise it locally to dig deeper.

Deliberate departures from the defaults, each because the spec cannot say more:

* ``listMemories``, ``listTokens``, ``listAgents``: a cursor is opaque and server-issued,
  so a random one is rightly refused (422). Valid-input cases leave it out; invalid-input
  cases still fuzz it.
* Owner ids (``createToken``'s ``user_id`` and ``agent_id``, the agent path id): the
  ``OwnerId`` pattern can say "no invisible character" only for the Basic Multilingual
  Plane, and not "in NFKC form" at all (its description says the server checks both), so
  a valid-input id the server refuses is replaced by a plain one.
* A request whose head (request line and headers) outgrows ``REQUEST_HEAD_BYTES`` (a
  negative query value of thousands of escaped characters) is refused with 431 by the HTTP
  layer before any operation is chosen, so it is checked as that refusal, not against an
  operation's statuses.
* ``importMemories``: the body is JSON lines of ``Memory`` documents, which OpenAPI 3.1
  can only describe as a string, so a random string is rightly refused (422). The
  "valid input is accepted" check is off there; every other check stays on.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import unquote

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import Case, GenerationMode, checks
from schemathesis.config import SchemathesisConfig

from memory_bank.api.middleware import REQUEST_HEAD_BYTES
from memory_bank.generated.spec import SPEC
from memory_bank.security.tokens import PERMISSIONS
from support.mcp_live import live_server
from support.owner_ids import takes_owner_id

EXAMPLES = int(os.environ.get("MEMORY_BANK_TEST_FUZZ_EXAMPLES", "25"))
SEED_KEYPATH = "fuzz.seed"
#: The negative-input statuses schemathesis accepts by default, plus 413: the spec
#: answers a body over its byte cap with payload_too_large.
REJECTION_STATUSES = [400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429]

schemathesis.serializer.alias("application/x-ndjson", "text/plain")


def fuzz_runs() -> list[tuple[str, GenerationMode]]:
    """Every operation with valid input, and with invalid input where it takes any input to break."""
    runs = []
    for path in SPEC["paths"].values():
        for operation in (op for op in path.values() if isinstance(op, dict) and "operationId" in op):
            runs.append((operation["operationId"], GenerationMode.POSITIVE))
            if path.get("parameters") or operation.get("parameters") or operation.get("requestBody"):
                runs.append((operation["operationId"], GenerationMode.NEGATIVE))
    return sorted(runs)


@dataclass(frozen=True)
class FuzzTarget:
    schema: schemathesis.BaseSchema
    memory_id: str
    keypath: str


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzTarget]:
    """The real app under uvicorn (tests/support/mcp_live.py) with a token that may do everything and one saved memory.

    The live server lifts the rate limit: hundreds of calls a minute are the point here.
    """
    with live_server(tmp_path_factory.mktemp("fuzz")) as server:
        token = server.token(org="acme", perms=PERMISSIONS)
        config = SchemathesisConfig.from_dict(
            {
                "auth": {"openapi": {"bearerAuth": {"bearer": token}}},
                "generation": {"allow-extra-parameters": False},
                "checks": {"negative_data_rejection": {"expected-statuses": REJECTION_STATUSES}},
            }
        )
        headers = {"Authorization": f"Bearer {token}"}
        seed = {"content": "The fuzzer saved this", "contexts": [{"snippet": "seed"}]}
        memory = httpx.post(f"{server.url}/v1/memory", json=seed, headers=headers).raise_for_status().json()
        httpx.put(f"{server.url}/v1/memory/keypaths/{SEED_KEYPATH}", json={"content": "seeded"}, headers=headers)
        yield FuzzTarget(schemathesis.openapi.from_url(f"{server.url}/openapi.json", config=config), memory["id"], SEED_KEYPATH)


def cases(target: FuzzTarget, operation_id: str, mode: GenerationMode) -> st.SearchStrategy[Case]:
    """Generated cases, half of them aimed at the seeded memory or keypath so 2xx paths are reached."""
    operation = target.schema.find_operation_by_id(operation_id)
    generated = operation.as_strategy(mode)
    names = {parameter.name for parameter in operation.path_parameters}
    seeded = {name: value for name, value in (("memory_id", target.memory_id), ("keypath", target.keypath)) if name in names}
    if seeded and mode is GenerationMode.POSITIVE:
        generated = st.one_of(generated, operation.as_strategy(mode, path_parameters=seeded))
    if operation_id in ("listMemories", "listTokens", "listAgents") and mode is GenerationMode.POSITIVE:
        generated = generated.map(_without_cursor)
    if operation_id in ("createToken", "deactivateAgent", "reactivateAgent") and mode is GenerationMode.POSITIVE:
        generated = generated.map(_owner_ids_the_server_takes)
    return generated


def _owner_ids_the_server_takes(case: Case) -> Case:
    """Assigned anew rather than changed in place: a case notices only assignments."""
    if isinstance(case.body, dict):
        case.body = {k: "fuzz-owner" if k in ("user_id", "agent_id") and not takes_owner_id(v) else v for k, v in case.body.items()}
    if "agent_id" in case.path_parameters and not takes_owner_id(unquote(case.path_parameters["agent_id"])):  # held percent-encoded
        case.path_parameters = {**case.path_parameters, "agent_id": "fuzz-owner"}
    return case


def _without_cursor(case: Case) -> Case:
    if case.query:
        case.query.pop("cursor", None)
    return case


@pytest.mark.parametrize(("operation_id", "mode"), fuzz_runs(), ids=lambda value: str(getattr(value, "value", value)))
def test_operation_conforms_to_the_spec(target: FuzzTarget, operation_id: str, mode: GenerationMode) -> None:
    excluded = [checks.positive_data_acceptance] if operation_id == "importMemories" else []

    @given(case=cases(target, operation_id, mode))
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def conforms(case: Case) -> None:
        response = case.call()
        if response.status_code == 431:  # refused by the HTTP layer before any operation: no operation can declare it
            assert len(response.request.url or "") + sum(map(len, response.request.headers.values())) > REQUEST_HEAD_BYTES
            assert response.json()["code"] == "request_head_too_large"
            return
        case.validate_response(response, excluded_checks=excluded)

    conforms()
