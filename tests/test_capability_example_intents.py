"""The classifier trained on the spec's examples (capabilities/ranking/example_intents.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_bank.capabilities.ranking.example_intents import MOST_OPERATIONS, TextIntents, opening_word, value_shapes
from memory_bank.capabilities.ranking.example_requests import ExampleRequests
from memory_bank.capabilities.ranking.search import CapabilitySearch, Ranking
from memory_bank.generated.catalog import CAPABILITIES

EXPOSED = [c for c in CAPABILITIES if c["policy"]["expose"]]
WITH_EXAMPLES = ExampleRequests(EXPOSED)
WITHOUT_CLASSIFIER = ExampleRequests(EXPOSED, intents=False)


def _ranked(index: CapabilitySearch, request: str) -> list[tuple[str, float]]:
    return [(m.capability["name"], m.score) for m in index.search(request, limit=10)]


def _stripped(capability: Mapping[str, Any]) -> dict[str, Any]:
    return {**capability, "examples": []}


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_the_posterior_only_reshapes_the_example_score(request: str) -> None:
    """Whatever the request (odd Unicode, empty, long): each score stays in [0, 1] and under the best
    the examples gave, and an operation none of whose examples shares a word keeps 0: the
    classifier re-weights evidence, it never makes it up."""
    shaped, counted = WITH_EXAMPLES.scores(request), WITHOUT_CLASSIFIER.scores(request)
    assert shaped is not None and counted is not None
    assert all(0.0 <= s <= max(counted) + 1e-12 for s in shaped)
    assert all(s == 0.0 for s, c in zip(shaped, counted) if c == 0.0)


def test_a_catalog_without_examples_ranks_as_without_the_classifier() -> None:
    plain = [_stripped(c) for c in EXPOSED]
    shaped, unshaped = CapabilitySearch(plain), CapabilitySearch(plain, ranking=Ranking(example_intents=False))
    for request in ("remember that I like tea", "delete mem_01JA2B3C4D5E6F7G8H9J", "what do you know about Rome?"):
        assert _ranked(shaped, request) == _ranked(unshaped, request)


def test_one_operation_with_examples_is_nothing_to_tell_apart() -> None:
    catalog = [EXPOSED[0], *(_stripped(c) for c in EXPOSED[1:])]
    with_one = ExampleRequests(catalog)
    assert with_one.scores("remember that I like tea") == ExampleRequests(catalog, intents=False).scores("remember that I like tea")


def test_operations_without_examples_keep_their_score_beside_ones_with() -> None:
    """A mixed catalog (a vendor spec beside ours): only the operations with examples are re-shaped."""
    catalog = [*EXPOSED[:5], *(_stripped(c) for c in EXPOSED[5:])]
    request = "forget the note about my old address"
    shaped, counted = ExampleRequests(catalog).scores(request), ExampleRequests(catalog, intents=False).scores(request)
    assert shaped is not None and counted is not None
    assert shaped[5:] == counted[5:] and shaped[:5] != counted[:5]


def test_a_misspelt_order_still_finds_the_operation_its_examples_share() -> None:
    """Character n-grams keep a typo near the examples' words: counted word by word, the unknown
    "remeber" leaves only "lives" and "sister", and the search comes first. The spelling
    correction, which reads "remeber" as "remember" before either, is off on both sides."""
    request = "remeber that my sister lives in Oslo"
    assert _ranked(CapabilitySearch(EXPOSED, ranking=Ranking(example_intents=False, spelling=False)), request)[0][0] != "postMemory"
    assert _ranked(CapabilitySearch(EXPOSED, ranking=Ranking(spelling=False)), request)[0][0] == "postMemory"


def test_a_catalog_with_too_many_operations_with_examples_ranks_by_the_count_alone() -> None:
    """Training grows with operations x n-grams x texts; past MOST_OPERATIONS nothing is trained."""
    many = [{**EXPOSED[i % len(EXPOSED)], "name": f"op{i}"} for i in range(MOST_OPERATIONS + 1)]
    request = "remember that my sister lives in Oslo"
    assert ExampleRequests(many).scores(request) == ExampleRequests(many, intents=False).scores(request)
    assert ExampleRequests(many[:MOST_OPERATIONS]).scores(request) != ExampleRequests(many[:MOST_OPERATIONS], intents=False).scores(request)


@settings(max_examples=100, deadline=None)
@given(st.text(st.characters(exclude_categories=()), max_size=200))
def test_the_search_never_raises_on_text_it_was_not_trained_for(request: str) -> None:
    """Any str, lone surrogates, NUL and format characters included (stdio and in-process
    callers can pass them): n-grams the classifier never saw make a zero row, not an error."""
    for match in CapabilitySearch(EXPOSED).search(request, limit=20):
        assert 0.0 <= match.score <= 1.0


def test_an_operation_whose_examples_have_no_word_ranks_as_one_without_examples() -> None:
    """Blank examples ("", "  ", a tab) or ones with no word ("!!!", an emoji) say nothing about the
    operation: it keeps its own score, where the examples' share of 0 cost it a third of it."""
    wordless = {**EXPOSED[0], "examples": ["", "   ", "\t", "!!!", "🧠"]}
    stripped = _stripped(EXPOSED[0])
    request = EXPOSED[0]["title"]
    rest = list(EXPOSED[1:])
    assert _ranked(CapabilitySearch([wordless, *rest]), request) == _ranked(CapabilitySearch([stripped, *rest]), request)


def test_two_operations_with_the_same_examples_train_and_split_their_evidence() -> None:
    """Identical texts under two labels are a tie for the classifier, not a failure to train."""
    twins = [{**EXPOSED[0], "name": "first"}, {**EXPOSED[0], "name": "second"}]
    index = CapabilitySearch(twins)
    ranked = _ranked(index, "remember that I like tea")
    assert [name for name, _ in ranked] == ["first", "second"] and ranked[0][1] == ranked[1][1]
    assert _ranked(index, "\u200f\u0000") == []


_SEGMENT = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)


@settings(max_examples=100, deadline=None)
@given(st.lists(_SEGMENT, min_size=2, max_size=5), st.lists(_SEGMENT, min_size=2, max_size=5), st.sampled_from(".//"))
def test_which_keypath_a_request_names_does_not_sway_the_classifier(first: list[str], second: list[str], joint: str) -> None:
    """An id or a keypath is read as its shape: two requests that differ only in which one they
    name get the same posterior."""
    intents = TextIntents.fit(EXPOSED, [c["examples"] for c in EXPOSED])
    assert intents is not None
    one, other = (f"set {joint.join(path)} to dark" for path in (first, second))
    assert intents.reshape([1.0] * len(EXPOSED), one) == intents.reshape([1.0] * len(EXPOSED), other)


def test_ids_and_paths_become_shapes_and_words_stay_words() -> None:
    assert value_shapes("Forget mem_01JA2B3C4D5E6F7G8H9J") == value_shapes("forget 9a7c6b5d-4e3f-4a1b-8c2d-0e9f8a7b6c5d")
    assert value_shapes("read user.preferences.theme") == value_shapes("read work/calendar/length")
    assert value_shapes("set v2 to python 3.8, e-mail on") == "set v2 to python 3.8, e-mail on"


def _margin(index: CapabilitySearch, request: str, wanted: str) -> float:
    """How far ``wanted`` leads the best other operation for ``request`` (negative: it does not lead)."""
    scores = dict(_ranked(index, request))
    return scores.get(wanted, 0.0) - max(score for name, score in scores.items() if name != wanted)


def test_with_shapes_a_bare_keypath_reads_and_an_assignment_writes() -> None:
    """Without shapes, the n-grams of the keypaths the examples name pull a request towards the
    operation whose examples happen to name similar ones; with them, the words around the keypath
    decide, and the right operation leads by more."""
    index, plain = CapabilitySearch(EXPOSED), CapabilitySearch(EXPOSED, ranking=Ranking(value_shapes=False))
    for request, wanted in (("garage.door.code", "getMemoryKeypath"), ("kids/school/pickup_time = 15:30", "putMemoryKeypath")):
        assert 0 < _margin(index, request, wanted)
        assert _margin(plain, request, wanted) < _margin(index, request, wanted)


def test_the_opening_word_is_the_first_word_unless_it_is_a_function_word() -> None:
    assert opening_word("remember: only window seats") == ["rememb"]
    assert opening_word("   log this: the deploy history") == ["log"]
    assert opening_word("what do you remember about seats?") == opening_word("please save this") == []
    assert opening_word("") == opening_word("!!! 42") == []


def test_where_remember_stands_decides_between_saving_and_searching() -> None:
    """Opening a request, "remember" orders a save; after a question word it asks what is known.
    Read within words only, the content of the order ("only window seats", "history") pulls
    these towards the search and the history read: the opening word widens the save's lead."""
    index, unplaced = CapabilitySearch(EXPOSED), CapabilitySearch(EXPOSED, ranking=Ranking(opening_word=False))
    for request in ("remember: only window seats", "log this: the deploy history lives in the wiki"):
        assert 0 < _margin(unplaced, request, "postMemory") < _margin(index, request, "postMemory")
    assert _ranked(index, "what do you remember about window seats?")[0][0] == "getMemorySearch"


def test_a_catalog_whose_texts_all_open_with_function_words_still_trains() -> None:
    """No opening word to learn: the classifier reads the n-grams alone instead of failing to build."""
    plain = [
        {**capability, "title": f"The {capability['name']}", "description": "", "examples": [f"the {word} one" for word in words]}
        for capability, words in zip(EXPOSED[:2], (["red", "blue"], ["green", "grey"]))
    ]
    intents = TextIntents.fit(plain, [c["examples"] for c in plain])
    assert intents is not None
    first, second = intents.reshape([1.0, 1.0], "the red one")
    assert first > second
