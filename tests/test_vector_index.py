"""The vector indexes of semantic memory search: same neighbours as the full scan, in step with
every write, owner-scoped, and (in process) within their memory budget, on both backends."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from memory_bank.security.principal import Principal
from memory_bank.store import MemoryFilter, MemoryStore
from memory_bank.store.database import search_backend, vector_index
from memory_bank.store.filters import visible_to
from memory_bank.store.search import semantic, sqlite_vectors
from memory_bank.store.search.vector_cache import CachedVectors
from memory_bank.store.tables import MemoryRow
from memory_bank.textsearch.embeddings import DIMENSIONS
from memory_bank.transfer import export_line, parse_records
from support.requirements import semantic_extra
from support.transfer import exported_rows

np = semantic_extra("numpy")
semantic_extra("sqlite_vec")
semantic_extra("usearch")

SMALL = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # shrinking a database workload takes minutes
)
_orgs = itertools.count()


def vector(text: str) -> Any:
    """A random unit vector fixed by ``text``: the same memory text always lands in the same place."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    raw = np.random.default_rng(seed).normal(size=DIMENSIONS).astype(np.float32)
    return raw / np.linalg.norm(raw)


def embed(texts: Any) -> Any:
    return np.stack([vector(text) for text in texts])


def indexes(engine: Engine) -> list[semantic.VectorIndex]:
    """The backend's own index and the in-process one (which runs on any SQL backend)."""
    own = vector_index(engine, 2**30)
    assert own is not None  # the extra is installed: SQLite must have loaded sqlite-vec
    return [own] if isinstance(own, CachedVectors) else [own, CachedVectors(2**30)]


#: (operation, user, text or index of an earlier memory)
_operations = st.lists(
    st.one_of(
        st.tuples(st.just("create"), st.sampled_from(["ann", "bob"]), st.sampled_from(["user", "org"]), st.integers(0, 10**6)),
        st.tuples(st.just("patch"), st.integers(0, 50), st.integers(0, 10**6)),
        st.tuples(st.just("delete"), st.integers(0, 50), st.just(0)),
        st.tuples(st.just("put"), st.sampled_from(["k.a", "k.b"]), st.integers(0, 10**6)),
    ),
    min_size=5,
    max_size=30,
)


def apply(store: MemoryStore, principal: Callable[[str], Principal], operations: list[tuple[Any, ...]]) -> None:
    """Run the writes; patches and deletes pick a live chain head (none yet: skipped)."""
    heads: dict[str, str] = {}  # id -> user of the live chain heads
    for position, operation in enumerate(operations):
        kind, text = operation[0], f"{operation[0]} {position} {operation[-1]}"  # unique: no replay
        if kind == "create":
            row, _ = store.create(principal(operation[1]), {"content": text, "scope": operation[2]})
        elif kind == "put":
            row, _ = store.put_keypath(principal("ann"), operation[1], {"content": text})
        elif heads:
            target = list(heads)[operation[1] % len(heads)]
            user = heads.pop(target)
            if kind == "delete":
                store.delete(principal(user), target)
                continue
            row = store.patch(principal(user), target, {"content": text})
        else:
            continue
        heads.pop(row.supersedes_id or "", None)
        heads[row.id] = row.user_id


def top(near: dict[int, float], n: int) -> list[int]:
    """The ``n`` most similar rows; similarity 0 (clipped) is no evidence, and its ties have no order."""
    return sorted((pk for pk in near if near[pk] > 0), key=near.__getitem__, reverse=True)[:n]


@SMALL
@given(operations=_operations, seed=st.integers(0, 2**32 - 1), current_only=st.booleans())
def test_the_index_finds_the_full_scans_neighbours(
    engine: Engine, make_principal, monkeypatch: pytest.MonkeyPatch, operations: list[tuple[Any, ...]], seed: int, current_only: bool
) -> None:
    """For any mix of writes (another org's included), the nearest rows through each index are
    the full scan's, with the same similarities; another owner's rows are never proposed."""
    monkeypatch.setattr(semantic, "NEIGHBOURS", 4)  # fewer than the rows, so the cut matters
    org = f"vec{next(_orgs)}"
    store = MemoryStore(engine, embed)
    apply(store, lambda user: make_principal(org=org, user=user), operations)
    apply(store, lambda user: make_principal(org=f"{org}-other", user=user), operations)  # same vectors, other org
    ann = make_principal(org=org, user="ann")
    reader = semantic.Reader(org, "ann", current_only=current_only)
    where = MemoryFilter(include_superseded=not current_only).clauses(ann, search_backend(engine))
    query = vector(f"query {seed}")
    with Session(engine) as session:
        full = semantic.similarities(session, where, query)
        visible = set(session.scalars(sa.select(col(MemoryRow.pk)).where(visible_to(ann))))
        for index in indexes(engine):
            found = index.candidates(session, reader, query, 8)
            assert found is not None and set(found) <= visible
            near = semantic.nearest(session, index, reader, where, query)
            assert top(near, 4) == top(full, 4)
            assert all(near[pk] == pytest.approx(full[pk], abs=1e-6) for pk in near)


def index_rows(engine: Engine) -> set[tuple[int, str, str, int]]:
    with engine.connect() as connection:
        rows = connection.exec_driver_sql(f"SELECT rowid, org_id, holder, live FROM {sqlite_vectors.TABLE}")
        return {(pk, org, holder, int(live)) for pk, org, holder, live in rows}


def recount(engine: Engine) -> set[tuple[int, str, str, int]]:
    """What the index should hold, from ``memory`` itself."""
    statement = sa.text(
        "SELECT m.pk, m.org_id, m.scope, m.user_id, m.superseded_at IS NULL FROM memory m"
        " WHERE m.embedding IS NOT NULL AND NOT EXISTS"
        " (SELECT 1 FROM memory t WHERE t.chain_id = m.chain_id AND t.deleted_at IS NOT NULL)"
    )
    with engine.connect() as connection:
        rows = connection.execute(statement).all()
    return {(pk, org, "org" if scope == "org" else f"u:{user}", int(live)) for pk, org, scope, user, live in rows}


SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


@SQLITE_ONLY
@SMALL
@given(operations=_operations)
def test_sqlite_vec_rows_follow_every_write(engine: Engine, make_principal, operations: list[tuple[Any, ...]]) -> None:
    """Creates, patches, keypath puts, deletes and an import: the vec0 table equals a recount."""
    org = f"vec{next(_orgs)}"
    store = MemoryStore(engine, embed)
    apply(store, lambda user: make_principal(org=org, user=user), operations)
    exported = [export_line(row) for row in exported_rows(store, make_principal(org=org), 1000)]
    if exported:
        store.import_records(make_principal(org=org, user="carl"), parse_records("".join(exported)))
    assert index_rows(engine) == recount(engine)


@SQLITE_ONLY
def test_a_start_without_the_extension_drops_the_triggers_and_the_next_start_rebuilds(
    engine: Engine, make_principal, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryStore(engine, embed)
    ann = make_principal()
    kept, _ = store.create(ann, {"content": "kept"})
    with monkeypatch.context() as without:
        without.setattr(sqlite_vectors, "loaded", lambda connection: False)
        with engine.begin() as connection:
            sqlite_vectors.install(connection)
    with Session(engine) as session:
        assert sqlite_vectors.SqliteVectors().candidates(session, semantic.Reader("acme", "ann"), vector("x"), 5) is None
    gone, _ = store.create(ann, {"content": "written while the index was off"})
    store.delete(ann, kept.id)
    assert index_rows(engine) != recount(engine)  # nothing kept it in step
    assert store.search(ann, MemoryFilter(), "written", 5)[0][0].id == gone.id  # searches scan meanwhile
    with engine.begin() as connection:
        sqlite_vectors.install(connection)
    assert index_rows(engine) == recount(engine) and {pk for pk, *_ in index_rows(engine)} == {gone.pk}


def test_the_in_process_index_stays_within_its_budget(engine: Engine, make_principal) -> None:
    """Each partition is loaded on first use; the least recently used is evicted to make room, a
    partition larger than the budget is never held, and results stay the full scan's throughout."""
    store = MemoryStore(engine, embed)
    for user, count in (("ann", 30), ("bob", 30), ("carl", 90)):
        for n in range(count):
            store.create(make_principal(user=user), {"content": f"{user} {n}"})
    per_row = 768 + 8 + 8 + 1  # float16 vector, pk, seen pk, live flag
    cache = CachedVectors(budget=per_row * 60)  # two partitions of 30 (and the empty shared one), not one of 90
    query = vector("query")

    def search(user: str) -> None:
        principal = make_principal(user=user)
        where = MemoryFilter().clauses(principal, search_backend(engine))
        with Session(engine) as session:
            near = semantic.nearest(session, cache, semantic.Reader("acme", user), where, query)
            assert top(near, 10) == top(semantic.similarities(session, where, query), 10)
        assert cache.held <= cache.budget

    search("ann")
    search("bob")
    assert set(cache.partitions()) == {("acme", None), ("acme", "ann"), ("acme", "bob")}
    search("carl")  # too big to hold: scanned, and nothing evicted for it
    assert ("acme", "carl") not in cache.partitions() and len(cache.partitions()) == 3
    store.create(make_principal(user="dan"), {"content": "dan 0"})
    search("dan")  # ann's partition is the least recently used
    assert ("acme", "ann") not in cache.partitions() and ("acme", "dan") in cache.partitions()
    search("ann")  # reloaded
    assert ("acme", "ann") in cache.partitions() and ("acme", "bob") not in cache.partitions()


def test_the_in_process_index_sees_another_replicas_writes(engine: Engine, make_principal) -> None:
    """A write through another store (another replica) changes the partition's row count: the
    next search fetches the new rows and marks what they superseded as old."""
    ours, theirs = MemoryStore(engine, embed), MemoryStore(engine, embed)
    ann = make_principal()
    first, _ = ours.create(ann, {"content": "first"})
    cache = CachedVectors(budget=2**20)
    reader = semantic.Reader("acme", "ann")
    with Session(engine) as session:
        assert cache.candidates(session, reader, vector("later"), 5) == [first.pk]
    later, _ = theirs.create(ann, {"content": "later"})
    newer = theirs.patch(ann, first.id, {"content": "first, again"})
    with Session(engine) as session:
        found = cache.candidates(session, reader, vector("later"), 5)
        assert found is not None and found[0] == later.pk and set(found) == {later.pk, newer.pk}
        everything = cache.candidates(session, semantic.Reader("acme", "ann", current_only=False), vector("x"), 5)
        assert everything is not None and set(everything) == {first.pk, later.pk, newer.pk}
    hits = [hit.id for hit, _ in ours.search(ann, MemoryFilter(), "first", 5)]
    assert hits[0] == newer.id and first.id not in hits


@pytest.mark.parametrize("ceiling", [8, 64])
def test_narrow_filters_widen_the_candidates_then_scan(engine: Engine, make_principal, monkeypatch: pytest.MonkeyPatch, ceiling: int) -> None:
    """A tag only 3 of 40 rows carry: the index is asked for more candidates while the filter
    rejects them, and past ``MAX_CANDIDATES`` the exact scan of what the filter admits answers."""
    monkeypatch.setattr(semantic, "NEIGHBOURS", 2)
    monkeypatch.setattr(semantic, "MAX_CANDIDATES", ceiling)
    store = MemoryStore(engine, embed)
    ann = make_principal()
    for n in range(40):
        store.create(ann, {"content": f"row {n}", "tags": ["rare"] if n % 13 == 5 else []})
    where = MemoryFilter(tags=("rare",)).clauses(ann, search_backend(engine))
    asked: list[int] = []
    for index in indexes(engine):
        real = index.candidates

        def counted(session: Session, reader: semantic.Reader, query: Any, k: int) -> list[int] | None:
            asked.append(k)
            return real(session, reader, query, k)

        monkeypatch.setattr(index, "candidates", counted)
        with Session(engine) as session:
            for seed in range(5):
                query = vector(f"narrow {seed}")
                near = semantic.nearest(session, index, semantic.Reader("acme", "ann"), where, query)
                assert top(near, 2) == top(semantic.similarities(session, where, query), 2)
    assert max(asked) == min(ceiling, 64) and len(set(asked)) > 1
