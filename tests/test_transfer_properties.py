"""Properties of export and import over generated accounts and files, on both backends.

* Round trip: whatever an account holds (any Unicode in content, tags and contexts,
  keypaths, version chains, tombstones), export -> import into a fresh owner ->
  export again gives the same records, ids and owners aside.
* Whatever file is imported, accepted or refused, every version chain of the account
  afterwards has exactly one head (a tombstone being a deleted head), and every
  keypath at most one current value.
"""

from __future__ import annotations

import json
import re
import uuid
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlmodel import Session, col

from memory_bank.errors import DomainError, ErrorCode
from memory_bank.generated.spec import SPEC
from memory_bank.security.principal import Principal
from memory_bank.store.memories import MemoryStore
from memory_bank.store.tables import MemoryRow
from memory_bank.transfer import parse_records
from support.transfer import chains, exported

SLOW = settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)

#: Any character a JSON string can carry, with the line breakers and controls made likely.
_char = st.one_of(
    st.characters(exclude_categories=("Cs",)),
    st.sampled_from(["\n", "\r", "\t", "\x00", "\u0085", "\u2028", "\u2029", "\ufeff", "😀"]),
)
#: Text the spec takes as content or a tag: at least one visible character (the pattern both share).
_visible = re.compile(SPEC["components"]["schemas"]["Content"]["pattern"]).search
_text = st.text(_char, min_size=1, max_size=40).filter(_visible)
_tags = st.lists(st.text(_char, min_size=1, max_size=64).filter(_visible), max_size=4, unique=True)
_contexts = st.lists(st.fixed_dictionaries({"snippet": _text}, optional={"origin": st.text(_char, max_size=30)}), max_size=3)
_keypath = st.sampled_from(["user.shell", "a", "a.b-c_d", "x.y.z"])

_save = st.tuples(st.just("save"), _text, _tags, _contexts)
_patch = st.tuples(st.just("patch"), st.integers(0, 9), _text, _tags)
_put = st.tuples(st.just("put"), _keypath, _text, _contexts)
_delete = st.tuples(st.just("delete"), st.integers(0, 9))
#: Starts with a save: an empty account exports an empty file, and an empty import is refused (422).
_operations = st.builds(lambda first, rest: [first, *rest], _save, st.lists(st.one_of(_save, _patch, _put, _delete), max_size=7))


def _apply(client, operations: list[tuple[Any, ...]]) -> None:
    """Build an account through the API; operations on chains that are gone are skipped."""
    heads: list[str] = []
    for op in operations:
        if op[0] == "save":
            response = client.post("/v1/memory", json={"content": op[1], "tags": op[2], "contexts": op[3]})
            assert response.status_code in (200, 201), response.text
            heads.append(response.json()["id"])
        elif op[0] == "put":
            response = client.put(f"/v1/memory/keypaths/{op[1]}", json={"content": op[2], "contexts": op[3]})
            assert response.status_code in (200, 201), response.text
            heads.append(response.json()["id"])
        elif heads:
            target = heads[op[1] % len(heads)]
            if op[0] == "patch":
                response = client.patch(f"/v1/memory/{target}", json={"content": op[2], "tags": op[3]})
            else:
                response = client.delete(f"/v1/memory/{target}")
            assert response.status_code in (200, 204, 404, 409), response.text


@SLOW
@given(operations=_operations)
def test_export_import_export_gives_the_same_records(make_client, operations: list[tuple[Any, ...]]) -> None:
    source = make_client(f"org-{uuid.uuid4().hex[:8]}", "ann")
    _apply(source, operations)
    first = exported(source)

    target = make_client(f"org-{uuid.uuid4().hex[:8]}", "gus")
    response = target.post("/v1/memory/import", content=source.get("/v1/memory/export").text)
    assert response.status_code == 200, response.text
    assert response.json() == {"imported": len(first), "skipped": 0}
    again = exported(target)
    assert chains(again) == chains(first)
    assert {r["user_id"] for r in again} <= {"gus"}


# -- arbitrary files: the chain invariant ------------------------------------------------

_T0 = datetime(2024, 1, 1, tzinfo=UTC)
_ID_POOL = [f"{letter * 20}{n}" for letter in "ABCD" for n in range(2)]


def _line(i: int, draw_parent: Any, version: int, superseded: bool, deleted: bool, keypath: str | None) -> dict[str, Any]:
    moment = (_T0 + timedelta(minutes=i)).isoformat()
    return {
        "id": _ID_POOL[i],
        "content": f"value {i}",
        "tags": [],
        "contexts": [],
        "scope": "user",
        "category": "fact",
        "confidence": 0.5,
        "keypath": keypath,
        "version": version,
        "supersedes_id": draw_parent,
        "superseded_at": moment if superseded else None,
        "deleted_at": moment if deleted else None,
        "created_at": moment,
        "updated_at": moment,
    }


@st.composite
def _files(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(1, len(_ID_POOL)))
    lines = []
    for i in range(count):
        parent = draw(st.one_of(st.none(), st.sampled_from(_ID_POOL), st.just("stored")))
        lines.append(
            _line(
                i,
                parent,
                draw(st.integers(1, 4)),
                draw(st.booleans()),
                draw(st.booleans()),
                draw(st.sampled_from([None, "k", "j"])),
            )
        )
    return lines


def _assert_chains_whole(session: Session, principal: Principal) -> None:
    rows = list(session.scalars(sa.select(MemoryRow).where(col(MemoryRow.org_id) == principal.org_id)))
    by_chain: dict[str, list[MemoryRow]] = defaultdict(list)
    for row in rows:
        by_chain[row.chain_id].append(row)
    for chain in by_chain.values():
        heads = [r for r in chain if r.superseded_at is None]
        assert len(heads) == 1, [(r.id, r.supersedes_id, r.superseded_at) for r in chain]
        assert all(r.deleted_at is None for r in chain if r.superseded_at is not None)
        assert sorted(r.version for r in chain) == list(range(1, len(chain) + 1))
    current_keypaths = [r.keypath for r in rows if r.keypath and r.superseded_at is None and r.deleted_at is None]
    assert len(current_keypaths) == len(set(current_keypaths))


@SLOW
@given(file=_files(), preload=st.booleans())
def test_after_any_import_every_chain_has_one_head(store: MemoryStore, engine, file: list[dict[str, Any]], preload: bool) -> None:
    principal = Principal(token_id="t", org_id=f"org-{uuid.uuid4().hex[:8]}", user_id="ann", agent_id=None, permissions=frozenset())
    stored_head = None
    if preload:
        row, _ = store.create(principal, {"content": "stored", "keypath": "k"})
        stored_head = store.patch(principal, row.id, {"content": "stored again"}).id
    for line in file:
        if line["supersedes_id"] == "stored":
            line["supersedes_id"] = stored_head or "Z" * 21
    try:
        store.import_records(principal, parse_records("".join(json.dumps(r) + "\n" for r in file), None))
    except DomainError as exc:
        assert exc.code is ErrorCode.invalid_params, exc
    with Session(engine) as session:
        _assert_chains_whole(session, principal)


@pytest.mark.parametrize("count", [1, 3])
def test_the_generated_files_can_be_valid(store: MemoryStore, engine, count: int) -> None:
    """The property above is not only ever about refusals: a well-formed generated chain is written."""
    file = [_line(i, _ID_POOL[i - 1] if i else None, i + 1, i < count - 1, False, "k") for i in range(count)]
    principal = Principal(token_id="t", org_id=f"org-{uuid.uuid4().hex[:8]}", user_id="ann", agent_id=None, permissions=frozenset())
    assert store.import_records(principal, parse_records("".join(json.dumps(r) + "\n" for r in file), None)) == (count, 0)
    with Session(engine) as session:
        _assert_chains_whole(session, principal)
