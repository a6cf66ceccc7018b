"""Per-owner postings (``store.search.postings``): exact, in step with every writer and replica, bounded.

The reference everywhere is a store that holds no postings and owners small enough to
scan: ``lexical``'s scan, which reads every searched row and counts its statistics
afresh (the full recount). Two replicas are two ``MemoryStore`` objects on one database:
what one writes, the other's next search must see, with the same scores.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import Engine

from memory_bank.errors import Conflict, InvalidInput
from memory_bank.security.principal import Principal
from memory_bank.store import MemoryFilter, MemoryStore
from memory_bank.store.search import changes, postings
from memory_bank.store.search.text import MAX_TERMS
from memory_bank.transfer import export_line, parse_records
from support.statements import statements
from support.transfer import exported_rows

EVERYTHING = MemoryFilter()
WORDS = ["garden", "spring", "python", "cache", "budget", "river", "violin", "pasta", "kayak", "orchard"]
organisations = itertools.count()

texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
writes = st.lists(
    st.one_of(
        st.tuples(st.just("save"), st.integers(0, 1), st.sampled_from(["user", "org"]), texts),
        st.tuples(st.just("patch"), st.integers(0, 30), st.sampled_from(["user", "org"]), texts),
        st.tuples(st.just("delete"), st.integers(0, 30), st.just(""), st.just("")),
        st.tuples(st.just("put"), st.integers(0, 1), st.sampled_from(["k.a", "k.b"]), texts),
        st.tuples(st.just("import"), st.integers(0, 1), st.just(""), st.just("")),
    ),
    min_size=1,
    max_size=15,
)
filters = st.sampled_from(
    [EVERYTHING, MemoryFilter(include_superseded=True), MemoryFilter(tags=("t1",)), MemoryFilter(keypath_prefix="k.")]
)


def ranking(store: MemoryStore, principal: Principal, q: str, where: MemoryFilter = EVERYTHING) -> list[tuple[str, float]]:
    return [(row.id, round(score, 9)) for row, score in store.search(principal, where, q, 20)]


def apply(store: MemoryStore, people: list[Principal], write: tuple[str, int, str, str]) -> None:
    """One write of the mix, by ann or bob of one org (a patch or delete of a row that is no
    longer the head, or not theirs, is refused as it would be over the API: no change)."""
    kind, who, option, text = write
    if kind == "save":
        try:  # the same words saved again with another scope or tags are refused: no change
            store.create(people[who], {"content": text, "scope": option, "tags": ["t1"] if len(text) % 2 else []})
        except Conflict:
            pass
    elif kind == "put":
        store.put_keypath(people[who], option, {"content": text})
    elif kind == "import":
        mine = exported_rows(store, people[1 - who], 5)
        try:  # refused whole when it would give a keypath two current values: no change
            store.import_records(people[who], parse_records("".join(export_line(row) for row in mine), None))
        except InvalidInput:
            pass
    else:
        rows = exported_rows(store, people[0], 100) + exported_rows(store, people[1], 100)
        if not rows:
            return
        row = rows[who % len(rows)]
        owner = people[0] if row.user_id == people[0].user_id else people[1]
        try:
            if kind == "patch":
                store.patch(owner, row.id, {"content": text, "scope": option})
            else:
                store.delete(owner, row.id)
        except Exception as exc:  # the row is no longer its chain's head
            assert type(exc).__name__ in ("Conflict", "NotFound"), exc


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=writes, after=writes, queries=st.lists(texts, min_size=1, max_size=4), where=filters)
def test_both_replicas_rank_exactly_as_a_full_recount_after_any_mix_of_writes(
    engine: Engine,
    make_principal: Callable[..., Principal],
    before: list[tuple[str, int, str, str]],
    after: list[tuple[str, int, str, str]],
    queries: list[str],
    where: MemoryFilter,
) -> None:
    """Creates in both scopes, patches that move a memory between scopes, deletes, keypath
    puts and imports, on replica ``one``; ``two`` searched in between, so it must catch up
    through the change log. Another org's rows are written too and must change nothing."""
    org = f"post{next(organisations)}"
    people = [make_principal(org, "ann"), make_principal(org, "bob")]
    other = [make_principal(f"{org}x", "ann"), make_principal(f"{org}x", "bob")]
    one, two, recount = MemoryStore(engine), MemoryStore(engine), MemoryStore(engine, lexical_cache_bytes=0)
    for write in before:
        apply(one, people, write)
        apply(one, other, write)
    for q in queries:
        for person in people:
            assert ranking(two, person, q, where) == ranking(recount, person, q, where) == ranking(one, person, q, where)
    for write in after:
        apply(one, people, write)
    for q in queries:
        for person in people:
            assert ranking(two, person, q, where) == ranking(recount, person, q, where), (q, person.user_id)


def test_a_replica_behind_the_kept_changes_reloads(
    engine: Engine, make_principal: Callable[..., Principal], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(changes, "KEPT", 2)
    monkeypatch.setattr(changes, "PRUNE_EVERY", 1)
    ann = make_principal(f"post{next(organisations)}", "ann")
    writer, reader = MemoryStore(engine), MemoryStore(engine)
    writer.create(ann, {"content": "garden spring"})
    assert len(reader.search(ann, EVERYTHING, "garden", 10)) == 1
    for n in range(5):
        writer.create(ann, {"content": f"garden note {n}"})
    with engine.connect() as connection:
        kept = connection.execute(sa.text("SELECT COUNT(*) FROM memory_change WHERE org_id = :o"), {"o": ann.org_id})
        assert kept.scalar_one() == 2
    assert ranking(reader, ann, "garden") == ranking(MemoryStore(engine, lexical_cache_bytes=0), ann, "garden")
    assert len(ranking(reader, ann, "garden")) == 6


def test_a_warm_search_reads_no_memory_row_to_rank_and_a_write_costs_one_read_by_pk(
    engine: Engine, make_principal: Callable[..., Principal]
) -> None:
    """The bound: whatever the query, a search reads the org's revision (and, when it moved,
    the changes since and the changed rows by pk); rows are read by pk only for the page."""
    ann = make_principal(f"post{next(organisations)}", "ann")
    store = MemoryStore(engine)
    for n in range(200):
        store.create(ann, {"content": f"garden {WORDS[n % len(WORDS)]} note {n}"})
    store.search(ann, EVERYTHING, "garden", 10)
    long_query = " ".join(f"{w}{n}" for n in range(100) for w in WORDS[:2]) + " the of a " + "garden " * 300
    for q in ("garden", "a b c d e", "the of and", long_query[:2000], "note " * 400):
        with statements(engine) as seen:
            store.search(ann, EVERYTHING, q, 10)
        reading = [s for s in seen if "search_text" in s and "memory.content" not in s]  # not the page read
        assert reading == [], reading
        assert len(seen) <= 5, seen  # revision, ranking facts, feedback, page rows
    store.create(ann, {"content": "a new garden memory"})
    with statements(engine) as seen:
        hits = store.search(ann, EVERYTHING, "garden new", 10)
    assert hits[0][0].content == "a new garden memory"
    reading = [s for s in seen if "search_text" in s and "memory.content" not in s]
    assert len(reading) == 1 and " IN " in reading[0].upper(), reading  # the changed row, by pk
    assert len(seen) <= 7, seen


@pytest.mark.parametrize("budget", [1, 20_000])
def test_the_budget_is_never_exceeded_and_an_owner_too_large_still_gets_exact_results(
    engine: Engine, make_principal: Callable[..., Principal], budget: int
) -> None:
    store, recount = MemoryStore(engine, lexical_cache_bytes=budget), MemoryStore(engine, lexical_cache_bytes=0)
    held = store._ranking._postings  # noqa: SLF001  (the object under test)
    assert held is not None
    people = [make_principal(f"post{next(organisations)}", "ann") for _ in range(6)]
    for person in people:
        for n in range(40):
            store.create(person, {"content": f"{WORDS[n % 10]} {WORDS[(n * 3) % 10]} memo {n}"})
    for person in people * 2:
        assert ranking(store, person, "garden memo") == ranking(recount, person, "garden memo")
        assert held.held <= budget
    if budget == 1:
        assert held.partitions() == []
    else:
        assert 0 < len(held.partitions()) < 2 * len(people)  # some evicted, least recently used first


def test_a_query_of_more_than_max_terms_is_cut_as_lexical_cuts_it(engine: Engine, make_principal: Callable[..., Principal]) -> None:
    ann = make_principal(f"post{next(organisations)}", "ann")
    store = MemoryStore(engine)
    for n in range(50):
        store.create(ann, {"content": f"word{n} word{n + 1} shared"})
    q = " ".join(f"word{n}" for n in range(MAX_TERMS + 10))
    assert ranking(store, ann, q) == ranking(MemoryStore(engine, lexical_cache_bytes=0), ann, q)


def test_segments_are_merged_and_stay_exact(
    engine: Engine, make_principal: Callable[..., Principal], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postings, "MAX_SEGMENTS", 2)
    ann = make_principal(f"post{next(organisations)}", "ann")
    store, recount = MemoryStore(engine), MemoryStore(engine, lexical_cache_bytes=0)
    for n in range(12):
        store.create(ann, {"content": f"garden {WORDS[n % 10]} {n}"})
        assert ranking(store, ann, "garden river") == ranking(recount, ann, "garden river")


def test_writers_at_once_each_take_a_revision_and_a_searching_replica_ends_exact(
    engine: Engine, make_principal: Callable[..., Principal]
) -> None:
    """Saves from several threads at once, another replica searching meanwhile: every save's
    transaction takes its own revision (none lost, none twice) and the reader ends exact."""
    ann = make_principal(f"post{next(organisations)}", "ann")
    writer, reader = MemoryStore(engine), MemoryStore(engine)
    failures: list[BaseException] = []

    def work(thread: int) -> None:
        try:
            for n in range(12):
                writer.create(ann, {"content": f"garden {WORDS[(thread + n) % 10]} thread {thread} note {n}"})
                reader.search(ann, EVERYTHING, "garden note", 10)
        except BaseException as exc:  # reported below, with the thread's traceback lost only if it is not
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    with engine.connect() as connection:
        revision = connection.execute(sa.text("SELECT revision FROM memory_revision WHERE org_id = :o"), {"o": ann.org_id})
        assert revision.scalar_one() == 48
    for q in ("garden note", "thread 2 note 7", "kayak river"):
        assert ranking(reader, ann, q) == ranking(MemoryStore(engine, lexical_cache_bytes=0), ann, q)
