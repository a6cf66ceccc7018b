"""Full-text search on both backends: query words, the score rule, ranking and filters."""

from __future__ import annotations

import pytest

from memory_bank.store import MemoryFilter, MemoryStore
from memory_bank.store.search.backend import score
from memory_bank.store.search.text import query_terms
from support.backends import sqlite_only

EVERYTHING = MemoryFilter()


@pytest.fixture
def ann(make_principal):
    return make_principal("acme", "ann")


def test_query_terms_drop_stopwords_punctuation_and_repeats_and_stem() -> None:
    assert query_terms("What editor does the user prefer? Editors!") == ["editor", "user", "prefer"]
    assert query_terms('"; DROP TABLE memory; -- OR NEAR(') == ["drop", "tabl", "memori", "near"]
    assert query_terms("the of ?!") == []


def test_score_bands_put_more_matched_words_first() -> None:
    best_partial = score(1, 1e9, 2)
    worst_full = score(2, 0.0, 2)
    assert 0 < best_partial < worst_full < score(2, 5.0, 2) < 1


def test_more_matching_words_rank_first(store: MemoryStore, ann) -> None:
    store.create(ann, {"content": "The sandbox image is rebuilt nightly"})
    both, _ = store.create(ann, {"content": "Deploy to the Daytona sandbox with make deploy"})
    store.create(ann, {"content": "Daytona is the remote dev environment provider we use for everything"})
    hits = store.search(ann, EVERYTHING, "daytona sandbox", 10)
    assert hits[0][0].id == both.id
    assert len(hits) == 3
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(0 <= s <= 1 for s in scores)


@sqlite_only
def test_stemming_and_tags_are_searched(store: MemoryStore, ann) -> None:
    row, _ = store.create(ann, {"content": "Runs the nightly backups", "tags": ["infrastructure"]})
    assert [r.id for r, _ in store.search(ann, EVERYTHING, "running backup", 5)] == [row.id]
    assert [r.id for r, _ in store.search(ann, EVERYTHING, "infrastructure", 5)] == [row.id]


def test_no_hit_and_no_words_are_empty(store: MemoryStore, ann) -> None:
    store.create(ann, {"content": "something"})
    assert store.search(ann, EVERYTHING, "unrelated", 5) == []
    assert store.search(ann, EVERYTHING, "the ... of", 5) == []


def test_min_score_filters_weak_hits(store: MemoryStore, ann) -> None:
    store.create(ann, {"content": "alpha beta"})
    store.create(ann, {"content": "alpha only"})
    scores = [s for _, s in store.search(ann, EVERYTHING, "alpha beta", 5)]
    assert len(scores) == 2
    assert len(store.search(ann, EVERYTHING, "alpha beta", 5, min_score=(scores[0] + scores[1]) / 2)) == 1


def test_superseded_versions_only_on_request(store: MemoryStore, ann) -> None:
    v1, _ = store.create(ann, {"content": "the build uses gradle"})
    v2 = store.patch(ann, v1.id, {"content": "the build uses bazel now, not gradle"})
    assert [r.id for r, _ in store.search(ann, EVERYTHING, "gradle", 5)] == [v2.id]
    wider = store.search(ann, MemoryFilter(include_superseded=True), "gradle", 5)
    assert {r.id for r, _ in wider} == {v1.id, v2.id}
    store.delete(ann, v2.id)
    assert store.search(ann, MemoryFilter(include_superseded=True), "gradle", 5) == []


def test_without_a_query_results_come_by_keypath(store: MemoryStore, ann) -> None:
    store.create(ann, {"content": "no keypath"})
    store.put_keypath(ann, "b.key", {"content": "b"})
    store.put_keypath(ann, "a.key", {"content": "a"})
    hits = store.search(ann, EVERYTHING, None, 10)
    assert [r.content for r, _ in hits] == ["a", "b", "no keypath"]
    assert {s for _, s in hits} == {1.0}


def test_search_filters_apply(store: MemoryStore, ann) -> None:
    store.create(ann, {"content": "coffee at nine", "tags": ["routine"], "project_id": "home"})
    store.create(ann, {"content": "coffee machine is broken", "category": "event"})
    assert len(store.search(ann, MemoryFilter(tags=("routine",)), "coffee", 5)) == 1
    assert len(store.search(ann, MemoryFilter(category="event"), "coffee", 5)) == 1
    assert len(store.search(ann, MemoryFilter(project_id="home"), "coffee", 5)) == 1


@sqlite_only
def test_non_ascii_tags_are_searchable(store: MemoryStore, ann) -> None:
    row, _ = store.create(ann, {"content": "x", "tags": ["café"]})
    assert [r.id for r, _ in store.search(ann, MemoryFilter(tags=("café",)), "cafe", 5)] == [row.id]
