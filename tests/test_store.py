"""MemoryStore on each backend: idempotency, versions, deletes, keypaths, paging."""

from __future__ import annotations

import contextlib
import re
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from memory_bank.errors import Conflict, DomainError, ErrorCode
from memory_bank.generated.spec import SPEC
from memory_bank.store import MemoryFilter, MemoryStore
from memory_bank.store.columns import new_id

EVERYTHING = MemoryFilter()


@pytest.fixture
def ann(make_principal):
    return make_principal("acme", "ann")


def code_of(excinfo: pytest.ExceptionInfo[DomainError]) -> ErrorCode:
    return excinfo.value.code


def test_create_applies_defaults_and_starts_a_chain(store: MemoryStore, ann) -> None:
    row, created = store.create(ann, {"content": "The user prefers vim"})
    assert created
    assert (row.scope, row.category, row.confidence, row.tags, row.contexts) == ("user", "fact", 0.6, [], [])
    assert (row.version, row.chain_id, row.supersedes_id) == (1, row.id, None)
    assert len(row.id) == 21 and row.created_at.tzinfo is not None


def test_same_content_is_one_record(store: MemoryStore, ann) -> None:
    first, _ = store.create(ann, {"content": "Deploys go through Daytona"})
    again, created = store.create(ann, {"content": "  Deploys go through Daytona\n"})
    assert not created and again.id == first.id
    with pytest.raises(Conflict, match=f"saved as memory {first.id} with different tags"):  # not a repeat: it asks for more
        store.create(ann, {"content": "Deploys go through Daytona", "tags": ["x"]})


def test_the_same_words_at_another_keypath_are_refused_naming_the_put_that_sets_them_there(store: MemoryStore, ann) -> None:
    first, _ = store.create(ann, {"content": "Editor is vim", "keypath": "user.editor"})
    with pytest.raises(Conflict, match=r"different keypath, .*; PUT /v1/memory/keypaths/team\.editor to set these words there"):
        store.create(ann, {"content": "Editor is vim", "keypath": "team.editor"})
    there, created = store.put_keypath(ann, "team.editor", {"content": "Editor is vim"})
    assert created and there.id != first.id and there.keypath == "team.editor"


def test_agent_is_part_of_the_content_key(store: MemoryStore, make_principal) -> None:
    a, _ = store.create(make_principal(agent="a1"), {"content": "same words"})
    b, created = store.create(make_principal(agent="a2"), {"content": "same words"})
    assert created and a.id != b.id
    c, created = store.create(make_principal(), {"content": "same words", "agent_id": "a1"})
    assert not created and c.id == a.id


def test_users_of_one_org_never_share_a_key(store: MemoryStore, make_principal) -> None:
    private, _ = store.create(make_principal(user="ann"), {"content": "my salary is 10"})
    other, created = store.create(make_principal(user="bob"), {"content": "my salary is 10"})
    assert created and other.id != private.id
    other_header, created = store.create(make_principal(user="bob"), {"content": "x"}, "k-1")
    mine, created_mine = store.create(make_principal(user="ann"), {"content": "y"}, "k-1")
    assert created and created_mine and mine.id != other_header.id


def test_header_key_replays_and_conflicts(store: MemoryStore, ann) -> None:
    first, _ = store.create(ann, {"content": "one"}, "req-1")
    again, created = store.create(ann, {"content": "one"}, "req-1")
    assert not created and again.id == first.id
    with pytest.raises(DomainError) as excinfo:
        store.create(ann, {"content": "two"}, "req-1")
    assert code_of(excinfo) is ErrorCode.conflict


def test_racing_duplicates_make_one_record(store: MemoryStore, ann) -> None:
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: store.create(ann, {"content": "raced"}), range(16)))
    assert len({row.id for row, _ in results}) == 1
    assert sum(created for _, created in results) == 1


def test_patch_writes_a_new_version(store: MemoryStore, ann) -> None:
    v1, _ = store.create(ann, {"content": "editor: vim", "tags": ["editor"]})
    v2 = store.patch(ann, v1.id, {"content": "editor: helix"})
    assert (v2.version, v2.supersedes_id, v2.chain_id, v2.tags) == (2, v1.id, v1.id, ["editor"])
    assert store.get(ann, v1.id).superseded_at is not None
    assert [r.id for r in store.history(ann, v2.id)] == [v1.id, v2.id]
    assert [r.id for r in store.history(ann, v1.id)] == [v1.id, v2.id]


def test_a_patch_that_changes_nothing_writes_no_version(store: MemoryStore, ann) -> None:
    v1, _ = store.create(ann, {"content": "editor: vim", "tags": ["editor"]})
    again = store.patch(ann, v1.id, {"content": "editor: vim", "tags": ["editor"]}, expected_version=1)
    assert again.id == v1.id and again.superseded_at is None
    assert [r.version for r in store.history(ann, v1.id)] == [1]
    assert store.patch(ann, v1.id, {"tags": ["editor", "tools"]}).version == 2


@pytest.mark.parametrize("expected_version", [None, 2])
def test_patch_refuses_stale_versions(store: MemoryStore, ann, expected_version) -> None:
    v1, _ = store.create(ann, {"content": "a"})
    store.patch(ann, v1.id, {"content": "b"})
    target = v1.id if expected_version is None else store.history(ann, v1.id)[-1].id
    version = 1 if expected_version is not None else None
    with pytest.raises(DomainError) as excinfo:
        store.patch(ann, target, {"content": "c"}, version)
    assert code_of(excinfo) is ErrorCode.conflict


@pytest.mark.parametrize("write", ["patch", "delete"])
def test_a_write_to_a_superseded_version_names_the_current_one(store: MemoryStore, ann, write: str) -> None:
    v1, _ = store.create(ann, {"content": "a"})
    v3 = store.patch(ann, store.patch(ann, v1.id, {"content": "b"}).id, {"content": "c"})
    with pytest.raises(DomainError) as excinfo:
        store.patch(ann, v1.id, {"content": "d"}) if write == "patch" else store.delete(ann, v1.id)
    assert code_of(excinfo) is ErrorCode.conflict
    assert excinfo.value.detail == f"this version was superseded by {v3.id} (version 3); {write} that one instead"


def test_racing_patches_extend_the_chain_once(store: MemoryStore, ann) -> None:
    v1, _ = store.create(ann, {"content": "counter"})

    def patch(n: int) -> str:
        try:
            return store.patch(ann, v1.id, {"content": f"counter {n}"}).id
        except DomainError as error:
            return error.code

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(patch, range(8)))
    assert outcomes.count(ErrorCode.conflict) == 7
    assert [r.version for r in store.history(ann, v1.id)] == [1, 2]


def test_patches_that_swap_two_memories_words_both_land(store: MemoryStore, ann) -> None:
    """Each patch gives up its own words' key and asks for the other's: InnoDB picks a deadlock victim, which is retried."""
    for round_ in range(12):
        left, _ = store.create(ann, {"content": f"left {round_}"})
        right, _ = store.create(ann, {"content": f"right {round_}"})
        start = threading.Barrier(2)

        def swap(memory_id: str, words: str) -> str:
            start.wait()
            return store.patch(ann, memory_id, {"content": words}).content

        with ThreadPoolExecutor(2) as pool:
            said = list(pool.map(swap, [left.id, right.id], [f"right {round_}", f"left {round_}"]))
        assert said == [f"right {round_}", f"left {round_}"]
        assert [r.version for r in store.history(ann, left.id)] == [1, 2]
        assert [r.version for r in store.history(ann, right.id)] == [1, 2]
        for words, chain in ((f"right {round_}", left.id), (f"left {round_}", right.id)):  # each save finds its swapped memory
            found, created = store.create(ann, {"content": words})
            assert not created and found.chain_id == chain and found.superseded_at is None


def test_a_key_let_go_of_while_its_heir_changes_goes_to_no_superseded_version(store: MemoryStore, ann) -> None:
    """The holder is deleted as the one other memory saying its words is changed: nobody says them
    after, so saving them is a new memory, never the heir's superseded version."""
    for round_ in range(12):
        holder, _ = store.create(ann, {"content": f"held {round_}"})
        heir = store.patch(ann, store.create(ann, {"content": f"other {round_}"})[0].id, {"content": f"held {round_}"})
        start = threading.Barrier(2)

        def run(write: Callable[[], object]) -> None:
            start.wait()
            write()

        with ThreadPoolExecutor(2) as pool:
            list(pool.map(run, [lambda: store.delete(ann, holder.id), lambda: store.patch(ann, heir.id, {"content": f"moved {round_}"})]))
        saved, created = store.create(ann, {"content": f"held {round_}"})
        assert created and saved.superseded_at is None


def test_racing_deletes_delete_once_and_the_rest_hear_404(store: MemoryStore, ann) -> None:
    for _ in range(5):
        memory, _ = store.create(ann, {"content": "delete me once"})
        start = threading.Barrier(6)

        def delete(_: int) -> str:
            start.wait()
            try:
                store.delete(ann, memory.id)
            except DomainError as error:
                return error.code
            return "deleted"

        with ThreadPoolExecutor(6) as pool:
            outcomes = Counter(pool.map(delete, range(6)))
        assert outcomes == {"deleted": 1, ErrorCode.not_found: 5}


def test_saving_words_while_they_are_deleted_saves_or_finds_them_never_409(store: MemoryStore, ann) -> None:
    """The holder of the words' key can be deleted between a save's refusal and its lookup: it saves again."""
    stop = threading.Event()

    def delete_whatever_holds_them() -> None:
        while not stop.is_set():
            row, _ = store.create(ann, {"content": "raced words"})
            with contextlib.suppress(DomainError):
                store.delete(ann, row.id)

    deleters = [threading.Thread(target=delete_whatever_holds_them) for _ in range(2)]
    for thread in deleters:
        thread.start()
    try:
        with ThreadPoolExecutor(4) as pool:
            saved = list(pool.map(lambda _: store.create(ann, {"content": "raced words"})[0].content, range(200)))
    finally:
        stop.set()
        for thread in deleters:
            thread.join()
    assert saved == ["raced words"] * 200


def test_delete_is_a_tombstone_and_frees_the_content(store: MemoryStore, ann) -> None:
    v1, _ = store.create(ann, {"content": "forget me"})
    v2 = store.patch(ann, v1.id, {"tags": ["t"]})
    store.delete(ann, v2.id)
    for memory_id in (v1.id, v2.id):
        with pytest.raises(DomainError) as excinfo:
            store.get(ann, memory_id)
        assert code_of(excinfo) is ErrorCode.not_found
    with pytest.raises(DomainError) as excinfo:
        store.delete(ann, v2.id)
    assert code_of(excinfo) is ErrorCode.not_found
    history = store.history(ann, v1.id)
    assert [r.deleted_at is not None for r in history] == [False, True]
    assert store.page(ann, MemoryFilter(include_superseded=True), 10)[0] == []
    again, created = store.create(ann, {"content": "forget me"})
    assert created and again.chain_id != v1.chain_id


def test_deleting_a_superseded_version_is_a_conflict(store: MemoryStore, ann) -> None:
    v1, _ = store.create(ann, {"content": "old"})
    store.patch(ann, v1.id, {"content": "new"})
    with pytest.raises(DomainError) as excinfo:
        store.delete(ann, v1.id)
    assert code_of(excinfo) is ErrorCode.conflict


def test_keypath_put_supersedes_and_unchanged_put_writes_nothing(store: MemoryStore, ann) -> None:
    first, created = store.put_keypath(ann, "user.editor", {"content": "vim"})
    assert created and first.keypath == "user.editor"
    same, created = store.put_keypath(ann, "user.editor", {"content": "vim"})
    assert not created and same.id == first.id
    second, created = store.put_keypath(ann, "user.editor", {"content": "helix"})
    assert not created and (second.version, second.supersedes_id) == (2, first.id)
    assert store.get_keypath(ann, "user.editor").id == second.id
    with pytest.raises(DomainError) as excinfo:
        store.get_keypath(ann, "user.shell")
    assert code_of(excinfo) is ErrorCode.not_found


def test_keypath_prefers_own_value_over_a_shared_one(store: MemoryStore, make_principal) -> None:
    ann, bob = make_principal(user="ann"), make_principal(user="bob")
    shared, _ = store.put_keypath(bob, "team.editor", {"content": "emacs", "scope": "org"})
    assert store.get_keypath(ann, "team.editor").id == shared.id
    own, created = store.put_keypath(ann, "team.editor", {"content": "vim"})
    assert created
    assert store.get_keypath(ann, "team.editor").id == own.id
    assert store.get_keypath(bob, "team.editor").id == shared.id


def test_list_pages_newest_first(store: MemoryStore, ann) -> None:
    ids = [store.create(ann, {"content": f"memory {n}"})[0].id for n in range(5)]
    seen, cursor = [], None
    while True:
        rows, cursor = store.page(ann, EVERYTHING, 2, cursor)
        seen += [r.id for r in rows]
        if cursor is None:
            break
    assert seen == ids[::-1]


def test_a_forged_cursor_is_invalid_params(store: MemoryStore, ann) -> None:
    with pytest.raises(DomainError) as excinfo:
        store.page(ann, EVERYTHING, 2, "not-a-cursor")
    assert code_of(excinfo) is ErrorCode.invalid_params
    assert excinfo.value.errors[0].field == "cursor"


def test_filters_narrow_lists(store: MemoryStore, ann) -> None:
    store.create(ann, {"content": "a", "tags": ["x", "y"], "category": "preference", "project_id": "p1"})
    store.create(ann, {"content": "b", "tags": ["x"], "keypath": "user.pref_editor"})
    store.create(ann, {"content": "c", "keypath": "userXpref.editor"})

    def contents(where: MemoryFilter) -> list[str]:
        return sorted(r.content for r in store.page(ann, where, 10)[0])

    assert contents(MemoryFilter(tags=("x",))) == ["a", "b"]
    assert contents(MemoryFilter(tags=("x", "y"))) == ["a"]
    assert contents(MemoryFilter(category="preference")) == ["a"]
    assert contents(MemoryFilter(project_id="p1")) == ["a"]
    # "_" and "." are literal in a prefix, not LIKE wildcards.
    assert contents(MemoryFilter(keypath_prefix="user.pref_")) == ["b"]


def test_a_keypath_prefix_matches_case_and_spaces_on_every_backend(store: MemoryStore, make_principal) -> None:
    """SQLite's LIKE ignores ASCII case: the prefix "A" found "a.b" there and not on MariaDB."""
    ann = make_principal(user="ann")
    for keypath in ("A.b", "a.b", "ax.y", "a b.c", "É.x", "é.x"):
        store.create(ann, {"content": keypath, "keypath": keypath})

    def found(prefix: str) -> list[str]:
        return sorted(r.content for r in store.page(ann, MemoryFilter(keypath_prefix=prefix), 10)[0])

    assert found("A") == ["A.b"]
    assert found("a.") == ["a.b"]
    assert found("a") == ["a b.c", "a.b", "ax.y"]
    assert found("a ") == ["a b.c"]
    assert found("É") == ["É.x"]


def test_feedback_needs_a_visible_memory(store: MemoryStore, make_principal) -> None:
    ann, eve = make_principal(user="ann"), make_principal(org="evil", user="eve")
    row, _ = store.create(ann, {"content": "x"})
    feedback = store.add_feedback(ann, row.id, {"feedback": "helpful", "notes": "used it"})
    assert (feedback.memory_id, feedback.user_id) == (row.id, "ann")
    with pytest.raises(DomainError) as excinfo:
        store.add_feedback(eve, row.id, {"feedback": "incorrect"})
    assert code_of(excinfo) is ErrorCode.not_found


def test_ids_use_the_whole_alphabet_evenly_and_match_the_spec() -> None:
    ids = [new_id() for _ in range(6400)]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(SPEC["components"]["schemas"]["MemoryId"]["pattern"], i) for i in ids)
    letters = Counter("".join(ids))  # 6,400 x 21 letters over 64: 2,100 each expected
    assert len(letters) == 64 and all(1800 < n < 2400 for n in letters.values())


def test_an_export_reads_one_snapshot_whatever_changes_while_it_streams(store: MemoryStore, ann) -> None:
    """Paged in transactions of their own, a patch between two pages left version 1 current in the
    first page and put version 2 in the second: a file that would not import."""
    rows = [store.create(ann, {"content": f"fact {n}"})[0] for n in range(3)]
    with store.export_snapshot(ann) as page:
        first = page(None, 1)
        changed = store.patch(ann, first[0].id, {"content": "fact 0, changed mid-export"})
        store.delete(ann, rows[2].id)
        rest = page(first[-1], 100)
    assert [r.id for r in first + rest] == [r.id for r in rows]
    assert all(r.superseded_at is None and r.deleted_at is None for r in first + rest)
    with store.export_snapshot(ann) as page:
        after = page(None, 100)
    assert changed.id in {r.id for r in after} and len(after) == 4  # the next export has the change
    assert [r.id for r in after if r.deleted_at is not None] == [rows[2].id]  # and the tombstone
