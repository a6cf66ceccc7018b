"""Safety before relevance: over generated catalogs and requests, what the annotations bar
never comes first, and a request that asks for it gets the ranking relevance gives."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_bank.capabilities.ranking.safety import REMOVAL, Hazard, Request, asks_question
from memory_bank.capabilities.ranking.search import CapabilitySearch, Ranking
from memory_bank.generated.catalog import CAPABILITIES
from memory_bank.textsearch.tokenize import identifier_terms

def removal_asked(request: str) -> bool:
    return Request.of(request).removal


#: Resource and action words, removal words among them, so destructive and harmless
#: operations share vocabulary with the requests.
NOUNS = ["memory", "note", "user", "report", "alert", "address", "profile", "order", "invoice", "record"]
ACTIONS = ["get", "list", "create", "update", "delete", "remove", "erase", "archive", "export", "find", "purge", "show"]
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
PLAIN = [w for w in NOUNS + ACTIONS + ["all", "my", "old", "the", "everything"] if not removal_asked(w)]


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
    if Request.of(request).question:
        assert not matches or matches[0].capability["annotations"]["readOnlyHint"] is True
    else:  # it names a change ("create", "update"): relevance decides, but never a deletion
        assert not matches or matches[0].capability["annotations"]["destructiveHint"] is False


@settings(max_examples=200, deadline=None)
@given(catalogs, plain_requests, st.sampled_from(["delete", "remove", "forget", "erase", "purge", "wipe", "discard"]))
def test_a_request_that_asks_to_remove_gets_the_ranking_relevance_gives(catalog: list[dict[str, Any]], words: str, verb: str) -> None:
    request = f"{verb} {words}"
    safe, unsafe = (CapabilitySearch(catalog, ranking=Ranking(safety=on)).search(request) for on in (True, False))
    assert safe == unsafe


#: Removal words in forms that state or name rather than order.
STATED = ["deleted", "deleting", "deletion", "removed", "removing", "forgotten", "erased", "purged", "cleared", "cancelled", "revoked", "dropped"]
ORDERS = sorted(REMOVAL)


@settings(max_examples=200, deadline=None)
@given(
    plain_requests,
    st.sampled_from(STATED + ORDERS),
    plain_requests,
    st.sampled_from(["about", "on", "regarding", "of", "that", "how to", "when to", "whether to"]),
)
def test_a_removal_word_in_a_topic_or_content_clause_asks_no_removal(words: str, removal: str, rest: str, opener: str) -> None:
    """"The memory about deleting stale branches was useful" is feedback, "remember that I
    always forget my keys" a save; "delete the memory about ..." is an order, whatever follows."""
    topic = f"the {words} {opener} {removal} {rest} was useful"
    assert not removal_asked(topic)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(ORDERS), plain_requests, st.sampled_from(["about", "on", "of", "that"]), plain_requests, st.sampled_from(str.split("lower title upper")))
def test_a_removal_verb_that_orders_asks_a_removal(verb: str, words: str, opener: str, rest: str, case: str) -> None:
    order = f"{getattr(verb, case)()} the {words} {opener} {rest}"
    assert removal_asked(order)
    assert removal_asked(f"please {verb} mem_01J9ZK3QF7R2XW8M4T6B5N, it was saved by mistake")


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
        ("remember the sky was clear today", False),
        ("save: my flight was cancelled, rebooked for Monday", False),
        ("save the quote \"forget about it\"", False),
        ("remember the phrase 'drop the mic'", False),
        ("remember that `DROP TABLE` is dangerous", False),
        ("set ui.delete_label to Cancel", True),  # "Cancel" stands alone: read as asked
        ("set ui.delete_label to blue", False),
        ("what does deleteMemory do?", False),
        ("save a memory\u200b: delete\u200bme is my username", False),
        ("I don't want you remembering my home address anymore. Wipe it.", True),
        ("unless I say delete, keep everything; save this", False),
        ("never ever delete; save", False),
        ("don`t delete it, show it", False),
        ("it deletes files", True),
        ("save it all before I forget", False),
        ("store it lest I forget", False),
        ("delete it before Friday", True),
        ("did we ever note how to purge the build cache?", False),
        ("tell me when to drop the old table", False),
        ("delete what I said about the dentist", True),
        ("how do I erase a memory", True),  # a question word opening the sentence opens no content
        ("get rid of the old address", True),
        ("remember that I got rid of the old car", False),
        ("that one is stale \u2014 erase it", True),  # a dash ends the clause "that" opened
        ("note that it's wrong - remove it", True),
        ("remember that the cache \u2013 not the disk \u2013 was full", False),
    ],
)
def test_only_a_removal_the_request_orders_counts(request_text: str, removal: bool) -> None:
    assert removal_asked(request_text) is removal


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["don't", "do not", "never", "dont", "Please don’t", "no need to", "unless you must"]), st.sampled_from(ORDERS), plain_requests)
def test_a_negated_removal_asks_no_removal(negation: str, removal: str, rest: str) -> None:
    """"From now on answer in Spanish. Don't forget that." asks to keep something."""
    request = f"{rest}. {negation} {removal} that"
    assert not removal_asked(request)
    both = f"{negation} {removal} the {rest}, {removal} the old one"
    assert removal_asked(both)


MEMORY_OPERATIONS = [c for c in CAPABILITIES if c["policy"]["expose"] and c["source"] == "memory.yaml"]
SAVES = ["remember", "note", "save", "record", "keep a record", "store this"]
SUBJECTS = ["we", "the team", "Alice", "my script", "the order"]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(SAVES), st.sampled_from(SUBJECTS), st.sampled_from(STATED), plain_requests, st.sampled_from(["that ", ": ", " "]))
def test_on_our_catalog_a_save_whose_content_names_a_removal_never_gets_the_deletion_first(
    save: str, subject: str, stated: str, rest: str, joint: str
) -> None:
    """The hostile pass's kind: "remember that we removed the old API", "save: my flight was
    cancelled", "record that the order was cancelled". The content states a removal; the
    request orders a save."""
    request = f"{save}{joint}{subject} {stated} {rest}"
    first = CapabilitySearch(MEMORY_OPERATIONS).search(request, limit=1)
    assert not first or first[0].capability["name"] != "deleteMemory", request


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["is the", "was the", "did the", "which", "what happens when the", "has the"]), plain_requests, st.sampled_from(STATED))
def test_on_our_catalog_a_question_about_a_removal_gets_no_write_first(opener: str, words: str, stated: str) -> None:
    request = f"{opener} {words} {stated}?"
    assert asks_question(request)
    first = CapabilitySearch(MEMORY_OPERATIONS).search(request, limit=1)
    assert not first or first[0].capability["annotations"]["readOnlyHint"] is True, request


def test_a_closing_question_mark_makes_a_question_unless_the_request_is_a_polite_order() -> None:
    assert asks_question("any notes on Rome?") and asks_question("¿qué guardé?")
    assert not asks_question("I need weekly alerts sent to me. Could you set that up?")
    assert not asks_question("delete it, please?")


def test_questions_are_known_by_their_form_and_polite_orders_are_not_questions() -> None:
    assert asks_question("What is stored under preferences.theme?")
    assert asks_question('Thanks. "Is there a note about the deadline')
    assert not asks_question("Can you tell me what is stored?")  # an indirect request
    assert not asks_question("find the note where I said it")


def test_only_stated_annotations_bar_anything() -> None:
    assert Hazard.of({}) == Hazard(destructive=False, writes=False)
    assert Hazard.of({"annotations": {"readOnlyHint": False, "destructiveHint": True}}) == Hazard(True, True)
    question = Request.of("what is in my notes")
    assert question.question and not question.removal
    assert not question.allows(Hazard(False, True)) and question.allows(Hazard(False, False))
    change = Request.of("what notes do I have? update the first one")
    assert not change.question  # a change ordered: more than a question
    assert Request.of("what if I update my notes").question  # a condition orders nothing
