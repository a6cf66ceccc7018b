"""Safety before relevance: over generated catalogs and requests, what the annotations bar
never comes first, and a request that asks for it gets the ranking relevance gives."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_bank.capabilities.ranking.safety import REMOVAL, Hazard, Request, asks_question, asks_removal
from memory_bank.capabilities.ranking.search import CapabilitySearch, Ranking
from memory_bank.textsearch.tokenize import identifier_terms

#: Resource and action words, removal words among them, so destructive and harmless
#: operations share vocabulary with the requests.
NOUNS = ["memory", "note", "user", "report", "alert", "address", "profile", "order", "invoice", "record"]
ACTIONS = ["get", "list", "create", "update", "delete", "remove", "erase", "archive", "export", "find", "purge", "show"]
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
PLAIN = [w for w in NOUNS + ACTIONS + ["all", "my", "old", "the", "everything"] if not set(identifier_terms(w)) & REMOVAL]


@st.composite
def operations(draw: st.DrawFn) -> dict[str, Any]:
    method = draw(st.sampled_from(METHODS))
    title = " ".join(draw(st.lists(st.sampled_from(NOUNS + ACTIONS), min_size=1, max_size=4)))
    return {
        "name": f"op{draw(st.integers(0, 10**6))}",
        "title": title,
        "description": title,
        "method": method,
        "path": "/" + draw(st.sampled_from(NOUNS)),
        "tags": [],
        "inputSchema": {"type": "object", "properties": {}},
        "annotations": {"readOnlyHint": method == "GET", "destructiveHint": method == "DELETE"},
        "source": draw(st.sampled_from(["a.yaml", "b.yaml"])),
    }


catalogs = st.lists(operations(), min_size=1, max_size=12)
plain_requests = st.lists(st.sampled_from(PLAIN), min_size=1, max_size=6).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(catalogs, plain_requests, st.integers(1, 5))
def test_a_request_that_asks_no_removal_never_gets_a_destructive_operation_first(
    catalog: list[dict[str, Any]], request: str, limit: int
) -> None:
    matches = CapabilitySearch(catalog).search(request, limit=limit)
    if matches:
        assert matches[0].capability["annotations"]["destructiveHint"] is False
        scores = [m.score for m in matches]
        assert scores == sorted(scores, reverse=True)
    unsafe = CapabilitySearch(catalog, ranking=Ranking(safety=False)).search(request, limit=len(catalog))
    allowed = [m for m in unsafe if not m.capability["annotations"]["destructiveHint"]]
    # The first is the best allowed one; when relevance finds none, nothing looks sure.
    assert [m.capability["name"] for m in matches[:1]] == [m.capability["name"] for m in allowed[:1]]


@settings(max_examples=200, deadline=None)
@given(catalogs, plain_requests)
def test_a_question_never_gets_a_write_first(catalog: list[dict[str, Any]], words: str) -> None:
    request = f"Which {words} do I have?"
    matches = CapabilitySearch(catalog).search(request)
    if Request.of(identifier_terms(request), request).question:
        assert not matches or matches[0].capability["annotations"]["readOnlyHint"] is True
    else:  # it names a change ("create", "update"): relevance decides, but never a deletion
        assert not matches or matches[0].capability["annotations"]["destructiveHint"] is False


@settings(max_examples=200, deadline=None)
@given(catalogs, plain_requests, st.sampled_from(["delete", "remove", "forget", "erase", "purge", "wipe", "discard"]))
def test_a_request_that_asks_to_remove_gets_the_ranking_relevance_gives(catalog: list[dict[str, Any]], words: str, verb: str) -> None:
    request = f"{verb} {words}"
    safe, unsafe = (CapabilitySearch(catalog, ranking=Ranking(safety=on)).search(request) for on in (True, False))
    assert safe == unsafe


REMOVALS = ["delete", "deleting", "remove", "removing", "forget", "erase", "purge", "wipe", "discard", "drop"]


@settings(max_examples=200, deadline=None)
@given(plain_requests, st.sampled_from(REMOVALS), plain_requests, st.sampled_from(["about", "on", "regarding", "of"]))
def test_a_removal_word_that_only_names_a_topic_asks_no_removal(words: str, removal: str, rest: str, preposition: str) -> None:
    """"The memory about deleting stale branches was useful" is feedback, not an order to
    delete; "delete the memory about ..." is one, whatever follows."""
    topic = f"the {words} {preposition} {removal} {rest} was useful"
    assert not asks_removal(identifier_terms(topic), topic)
    order = f"{removal} the {words} {preposition} {rest}"
    assert asks_removal(identifier_terms(order), order)


@pytest.mark.parametrize(
    ("request_text", "removal"),
    [
        ("Do you know anything about how we delete stale feature branches?", False),
        ("notes on removing the cache, and on dropping old tables", False),
        ("tell me about the launch, then delete the draft", True),
        ("Forget everything about my old address", True),
        ("the list of deleted items", False),
        ("remember that I always forget my keys", False),
        ("delete the note that says I like tea", True),
    ],
)
def test_a_topic_runs_to_the_end_of_its_clause(request_text: str, removal: bool) -> None:
    assert asks_removal(identifier_terms(request_text), request_text) is removal


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["don't", "do not", "never", "dont", "Please don’t"]), st.sampled_from(REMOVALS), plain_requests)
def test_a_negated_removal_asks_no_removal(negation: str, removal: str, rest: str) -> None:
    """"From now on answer in Spanish. Don't forget that." asks to keep something."""
    request = f"{rest}. {negation} {removal} that"
    assert not asks_removal(identifier_terms(request), request)
    both = f"{negation} {removal} the {rest}, {removal} the old one"
    assert asks_removal(identifier_terms(both), both)


def test_questions_are_known_by_their_form_and_polite_orders_are_not_questions() -> None:
    assert asks_question("What is stored under preferences.theme?")
    assert asks_question('Thanks. "Is there a note about the deadline')
    assert not asks_question("Can you tell me what is stored?")  # an indirect request
    assert not asks_question("find the note where I said it")


def test_only_stated_annotations_bar_anything() -> None:
    assert Hazard.of({}) == Hazard(destructive=False, writes=False)
    assert Hazard.of({"annotations": {"readOnlyHint": False, "destructiveHint": True}}) == Hazard(True, True)
    question = Request.of(identifier_terms("what is in my notes"), "what is in my notes")
    assert question.question and not question.removal
    assert not question.allows(Hazard(False, True)) and question.allows(Hazard(False, False))
    change = Request.of(identifier_terms("what if I update my notes"), "what if I update my notes")
    assert not change.question  # a change verb: more than a question
