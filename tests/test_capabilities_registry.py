"""The registry behind search_capabilities and GET /v1/capabilities: cards, filters, the REST route."""

from __future__ import annotations

import pytest

from memory_bank.capabilities.cards import cards_text, required_arguments, summary
from memory_bank.capabilities.registry import CapabilityRegistry
from memory_bank.errors import NotFound
from memory_bank.generated.catalog import CAPABILITIES

READ = {"memory:read"}.__contains__
REGISTRY = CapabilityRegistry(CAPABILITIES)
#: The operations MCP clients see; the catalog holds the others too (search ranks them).
EXPOSED = [c for c in CAPABILITIES if c["policy"]["expose"]]
CATALOG = {c["name"]: c for c in EXPOSED}
#: What a read-only token may use, counted from the catalog (adding an operation changes it).
READABLE = sum(1 for c in EXPOSED if READ(c["policy"]["permission"]))


def test_required_arguments_are_group_qualified() -> None:
    assert required_arguments(CATALOG["postMemory"]["inputSchema"]) == ["body.content"]
    assert required_arguments(CATALOG["putMemoryKeypath"]["inputSchema"]) == ["path.keypath", "body.content"]
    assert required_arguments(CATALOG["patchMemory"]["inputSchema"]) == ["path.memory_id", "body"]
    assert required_arguments(CATALOG["listMemories"]["inputSchema"]) == []


def test_summary_is_the_first_sentence_on_one_line() -> None:
    assert summary({"description": "Saves one thing.\nMore detail, e.g. this."}) == "Saves one thing."
    assert summary({"description": "Uses v1.2 of it. Then more."}) == "Uses v1.2 of it."
    assert summary({"description": "", "title": "Fallback"}) == "Fallback"


def test_permission_filter_applies_before_the_limit() -> None:
    result = REGISTRY.search("memory", allows=READ, limit=20)
    assert result.total == READABLE
    assert result.results and all(card.permission == "memory:read" for card in result.results)


@pytest.mark.parametrize(
    ("request_text", "wanted"),
    [
        ("save a memory", "postMemory"),
        ("remember that I take my coffee black", "postMemory"),
        ("set user.preferences.theme to dark", "putMemoryKeypath"),
        ("forget mem_01JA2B3C4D5E6F7G8H9J0K1M2N", "deleteMemory"),
        ("that memory was helpful, thumbs up", "postMemoryFeedback"),
    ],
)
def test_a_write_request_does_not_look_sure_of_a_read_for_a_read_only_token(request_text: str, wanted: str) -> None:
    """The write the request asks for still competes where the token cannot call it: the read
    that comes first scores as the poor match it is, and nothing looks sure."""
    writer = REGISTRY.search(request_text, allows={"memory:read", "memory:write"}.__contains__, limit=3)
    reader = REGISTRY.search(request_text, allows=READ, limit=3)
    assert writer.results[0].name == wanted and writer.withheld is None
    assert (writer.confidence or 0) >= REGISTRY.confidence.threshold
    assert reader.results and all(card.permission == "memory:read" for card in reader.results)
    assert (reader.results[0].score or 0) < (writer.results[0].score or 0) and reader.confidence == 0.0
    assert reader.withheld is not None and (reader.withheld.name, reader.withheld.permission) == (wanted, "memory:write")


def test_a_best_fit_the_token_may_call_is_not_called_withheld() -> None:
    for request_text in ("search my notes for the dentist", "what is stored at user.preferences.theme", ""):
        assert REGISTRY.search(request_text, allows=READ, limit=3).withheld is None


READ_WRITE = {"memory:read", "memory:write"}.__contains__
NOT_EXPOSED = {c["name"]: c for c in CAPABILITIES if not c["policy"]["expose"]}


@pytest.mark.parametrize(
    ("request_text", "wanted", "allows"),
    [
        ("export my memories", "exportMemories", READ_WRITE),
        ("give me a file of everything you know about me", "exportMemories", READ),
        ("import these notes from my old assistant's export", "importMemories", READ_WRITE),
        ("restore my memories from this backup file", "importMemories", READ),
    ],
)
def test_a_request_for_an_operation_mcp_does_not_offer_names_it_and_no_card_for_it(request_text: str, wanted: str, allows) -> None:
    """Export and import are HTTP only (``expose: false``): they compete in the ranking, so the
    result says the best fit is not offered and where it is, and no card for them is shown."""
    result = REGISTRY.search(request_text, allows=allows, limit=5)
    assert result.withheld is not None
    assert (result.withheld.name, result.withheld.reason) == (wanted, "not_exposed")
    assert result.withheld.route == f"{NOT_EXPOSED[wanted]['method']} {NOT_EXPOSED[wanted]['path']}"
    assert not {card.name for card in result.results} & set(NOT_EXPOSED)
    assert REGISTRY.get(wanted) is None and wanted not in {c["name"] for c in REGISTRY}
    text = cards_text(result, REGISTRY.confidence.threshold)
    permission = NOT_EXPOSED[wanted]["policy"]["permission"]
    assert text.startswith(f"The best fit, {wanted}, is not offered over MCP, only over HTTP at {result.withheld.route} (with {permission}); ")


@pytest.mark.parametrize("request_text", ["which operations can I call", "search capabilities", "revoke a token", "rotate a token"])
def test_an_operation_not_exposed_without_examples_is_never_named(request_text: str) -> None:
    """The operation behind search_capabilities itself, and the admin API's, have no examples: they do
    not compete, so search never names itself as HTTP only nor hints at another API."""
    for allows in (READ, READ_WRITE):
        withheld = REGISTRY.search(request_text, allows=allows, limit=5).withheld
        assert withheld is None or (withheld.reason, withheld.name in NOT_EXPOSED) == ("permission", False)


def test_withheld_keeps_to_the_category_asked_for() -> None:
    assert REGISTRY.search("export my memories", allows=READ_WRITE, category="Memory").withheld is None


def test_the_text_of_a_withheld_best_fit_with_no_cards_says_no_other_matches() -> None:
    result = REGISTRY.search("importmemories", allows=READ_WRITE, limit=5)
    if result.results:  # some card matched too: the other wording applies
        pytest.skip("not the no-card case for this catalog")
    assert cards_text(result, REGISTRY.confidence.threshold).split(".\n")[1].startswith("No other operation matches")


def test_an_operation_not_exposed_never_shows_in_a_listing_or_a_category() -> None:
    listing = REGISTRY.search("", allows=READ_WRITE)
    assert listing.results and not {card.name for card in listing.results} & set(NOT_EXPOSED)
    with pytest.raises(NotFound):  # no exposed operation is in the Transfer category
        REGISTRY.search("export", allows=READ_WRITE, category="Transfer")


def test_a_token_ranks_its_operations_in_the_order_its_whole_api_does() -> None:
    """Leaving out what a token may not call does not reorder what it may."""
    everything = REGISTRY.search("what did I save about my sister's birthday?", allows={"memory:read", "memory:write"}.__contains__, limit=13)
    reader = REGISTRY.search("what did I save about my sister's birthday?", allows=READ, limit=13)
    readable = [card for card in everything.results if card.permission == "memory:read"]
    assert [(c.name, c.score) for c in reader.results] == [(c.name, c.score) for c in readable]


def test_blank_query_lists_everything_allowed_by_category_ignoring_limit() -> None:
    result = REGISTRY.search("  ", allows=lambda permission: True, limit=1)
    by_category = sorted(EXPOSED, key=lambda c: c["policy"]["category"])  # stable: spec order within one
    assert [card.name for card in result.results] == [c["name"] for c in by_category]
    assert all(card.score is None for card in result.results)


def test_category_is_case_insensitive_and_an_unknown_one_is_refused_naming_the_known() -> None:
    assert REGISTRY.search("", allows=READ, category="MEMORY").results
    assert REGISTRY.search("", allows=READ, category="admin").results == []  # there, but this token may not use it
    with pytest.raises(NotFound) as refused:
        REGISTRY.search("save a note", allows=READ, category="keypaths")
    assert refused.value.detail == "no category is named 'keypaths'; there are Admin, Memory"
    assert REGISTRY.get("nope") is None and REGISTRY.get("postMemory") is CATALOG["postMemory"]


def test_duplicate_names_are_refused() -> None:
    with pytest.raises(ValueError, match="unique"):
        CapabilityRegistry([CAPABILITIES[0], CAPABILITIES[0]])


def test_rest_route_is_the_same_search(make_client) -> None:
    reader = make_client("acme", "ann", perms=["memory:read"])
    found = reader.get("/v1/capabilities", params={"q": "search my memories", "include_schema": "true"})
    assert found.status_code == 200
    body = found.json()
    assert body["total"] == READABLE and body["results"][0]["name"] == "getMemorySearch"
    assert body["results"][0]["inputSchema"] == CATALOG["getMemorySearch"]["inputSchema"]
    assert reader.get("/v1/capabilities", params={"q": "x", "limit": 21}).json()["code"] == "invalid_params"


def test_rest_route_needs_a_token(client) -> None:
    assert client.get("/v1/capabilities").json()["code"] == "unauthorized"


def test_the_text_an_agent_reads_says_the_withheld_best_fit_first() -> None:
    result = REGISTRY.search("save a memory", allows=READ, limit=2)
    text = cards_text(result, REGISTRY.confidence.threshold)
    assert text.startswith("The best fit, postMemory, needs memory:write, which this token lacks; none of these does what was asked.\n")
    assert "postMemory" not in text.split("\n", 1)[1]
