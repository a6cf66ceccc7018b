"""The text block of a ``search_capabilities`` result: the cards in brief, not their JSON again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memory_bank.app import create_app
from memory_bank.capabilities.ranking.confidence import HYBRID, LEXICAL
from memory_bank.capabilities.registry import CapabilityRegistry
from memory_bank.generated.catalog import CAPABILITIES
from memory_bank.mcp.tools import search_tool
from memory_bank.settings import Settings
from support.mcp_live import call_tool


@pytest.fixture
def search(database_url: str) -> Iterator[Any]:
    app = create_app(Settings(database_url=database_url))
    token, _ = app.state.tokens.create("acme", "ann", "agent-1", ["memory:read"])
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield lambda arguments: call_tool(client, token, "search_capabilities", arguments)
    app.state.engine.dispose()


def _text(result: dict[str, Any]) -> str:
    [block] = result["content"]
    assert block["type"] == "text"
    return str(block["text"])


def test_every_card_is_in_the_text_with_its_score_and_requirements(search: Any) -> None:
    result = search({"query": "read the value at user.preferences.editor", "limit": 3})
    text, cards = _text(result), result["structuredContent"]["results"]
    assert len(cards) == 3 and all(c["permission"] == "memory:read" for c in cards)  # a read-only token
    lines = text.splitlines()
    found = result["structuredContent"]
    assert lines[0] == f"3 of {found['total']} operations, best first, confidence {found['confidence']} (compare several cards when it is under {LEXICAL.threshold}):"
    for line, card in zip(lines[1:], cards, strict=True):
        required = ", ".join(card["required"]) or "nothing"
        assert line == f"- {card['name']}: {card['title']} ({card['permission']}, score {card['score']}; requires {required})"
    assert len(text) < len(json.dumps(result["structuredContent"])) / 2


def test_a_schema_asked_for_is_in_the_text_and_a_listing_has_no_scores(search: Any) -> None:
    found = search({"query": "search my notes", "limit": 1, "include_schema": True})
    [card] = found["structuredContent"]["results"]
    assert json.loads(_text(found).splitlines()[2].removeprefix("  inputSchema: ")) == card["inputSchema"]
    listing = _text(search({"query": ""}))
    assert listing.splitlines()[0].endswith("operations, by category:") and "score" not in listing


@pytest.mark.parametrize(
    "arguments", [{"query": "\u00a7\u00a7 \U0001f5d1\ufe0f"}, {"query": "\u0000"}, {"query": "", "category": "admin"}]
)
def test_no_match_says_so_instead_of_a_listing_header(search: Any, arguments: dict[str, Any]) -> None:
    # Punctuation, emoji or a NUL alone match nothing; a category the token may use nothing of lists nothing.
    # The text once said "0 of 5 operations, by category:", the header of a listing.
    result = search(arguments)
    assert result["structuredContent"]["results"] == [] and not result["isError"]
    total = result["structuredContent"]["total"]
    assert _text(result) == f"No operation matches (0 of {total}); an empty query without a category lists them all."


def test_the_tool_description_gives_the_threshold_of_the_ranker_in_use() -> None:
    exposed = [c for c in CAPABILITIES if c["policy"]["expose"]]
    description = search_tool(CapabilityRegistry(exposed)).description or ""
    assert f"`confidence`, how sure the first card is: below {LEXICAL.threshold} it is often a wrong guess" in description
    hybrid = CapabilityRegistry(exposed, embedder=lambda texts: [[1.0, 0.0] for _ in texts])
    assert f"below {HYBRID.threshold} it is often a wrong guess" in (search_tool(hybrid).description or "")
