"""The generator's body caps: a bound the schema sets is a cap; no bound still means a cap."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from memory_bank_codegen.body_bounds import UNBOUNDED_BYTES, max_json_bytes
from memory_bank_codegen.pytypes import TypeNamer


def cap(schema: dict[str, Any], components: dict[str, Any] | None = None) -> int:
    return max_json_bytes(schema, TypeNamer({"components": {"schemas": components or {}}}))


CLOSED = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "text": {"type": "string", "maxLength": 50},
        "flags": {"type": "array", "maxItems": 5, "items": {"type": "boolean"}},
        "n": {"type": "integer"},
        "kind": {"enum": ["a", "bb"]},
    },
}


@given(
    text=st.text(max_size=50),
    flags=st.lists(st.booleans(), max_size=5),
    n=st.integers(min_value=-(2**63), max_value=2**63),
    kind=st.sampled_from(["a", "bb"]),
    ascii_only=st.booleans(),
    indent=st.sampled_from([None, 0, 2, 8]),
)
def test_every_spelling_of_a_valid_body_fits_its_cap(text, flags, n, kind, ascii_only, indent) -> None:
    body = {"text": text, "flags": flags, "n": n, "kind": kind}
    assert len(json.dumps(body, ensure_ascii=ascii_only, indent=indent).encode()) <= cap(CLOSED)


def test_a_schema_without_bounds_gets_the_fallback_cap() -> None:
    assert cap({"type": "string"}) == UNBOUNDED_BYTES
    assert cap({"type": "array", "items": {"type": "integer"}}) == UNBOUNDED_BYTES
    assert cap({"type": "object", "properties": {"a": {"type": "integer"}}}) == UNBOUNDED_BYTES  # open object
    node = {"type": "object", "additionalProperties": False, "properties": {"next": {"$ref": "#/components/schemas/Node"}}}
    assert cap({"$ref": "#/components/schemas/Node"}, {"Node": node}) == UNBOUNDED_BYTES


def test_a_bounded_schema_is_capped_below_the_fallback() -> None:
    assert cap(CLOSED) < UNBOUNDED_BYTES
    assert cap({"type": "string", "maxLength": 10}) < cap({"type": "string", "maxLength": 11})
