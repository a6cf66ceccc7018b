"""MEMORY_BANK_SEMANTIC_CAPABILITIES as deployed: the served search is the hybrid, or start-up fails."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memory_bank.app import create_app
from memory_bank.capabilities.ranking.search import CapabilitySearch, Ranking
from memory_bank.capabilities.registry import CapabilityRegistry, competes
from memory_bank.capabilities.ranking.semantic import SemanticIndex, capability_texts
from memory_bank.generated.catalog import CAPABILITIES
from memory_bank.settings import Settings
from memory_bank.store.search import semantic
from memory_bank.textsearch.embeddings import load_embedder
from support.mcp_live import call_tool
from support.requirements import semantic_extra

QUERY = "jot down that the user's cat is called Miso"
#: What the test's token may call; the served ranking ranges over exactly these operations.
GRANTED = ("memory:read", "memory:write")


def _ranked(index: CapabilitySearch) -> list[tuple[str, float]]:
    accept = lambda capability: bool(capability["policy"]["expose"])  # noqa: E731
    return [(m.capability["name"], round(m.score, 4)) for m in index.search(QUERY, limit=5, accept=accept)]


def test_the_served_search_capabilities_ranks_with_the_hybrid(database_url: str) -> None:
    semantic_extra()
    embedder = load_embedder()
    assert embedder is not None
    callable_ = {*GRANTED, "token:any"}
    sources = {c["source"] for c in CAPABILITIES if c["policy"]["expose"] and c["policy"]["permission"] in callable_}
    reached = [c for c in CAPABILITIES if c["source"] in sources and competes(c)]  # what the registry ranks
    hybrid, lexical = _ranked(CapabilitySearch(reached, embedder=embedder)), _ranked(CapabilitySearch(reached))
    assert hybrid != lexical  # the fused scores are not the lexical ones, so the comparison below can fail
    app = create_app(Settings(database_url=database_url, semantic_capabilities=True))
    token, _ = app.state.tokens.create("acme", "ann", "agent-1", list(GRANTED))
    with TestClient(app, base_url="http://127.0.0.1") as client:  # a loopback origin, as a local client has
        result = call_tool(client, token, "search_capabilities", {"query": QUERY, "limit": 5})
    served = [(c["name"], c["score"]) for c in result["structuredContent"]["results"]]
    assert served == hybrid[: len(served)] and len(served) == 5
    app.state.engine.dispose()


def test_asking_for_the_hybrid_without_the_extra_fails_at_start_up(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic, "load_embedder", lambda: None)  # what load_embedder answers when the extra is missing
    with pytest.raises(semantic.SemanticExtraMissing, match="MEMORY_BANK_SEMANTIC_CAPABILITIES is on"):
        create_app(Settings(database_url=database_url, semantic_capabilities=True))
    with pytest.raises(semantic.SemanticExtraMissing, match="MEMORY_BANK_SEMANTIC_SEARCH and MEMORY_BANK_SEMANTIC_CAPABILITIES are on"):
        create_app(Settings(database_url=database_url, semantic_search=True, semantic_capabilities=True))


def test_the_embedding_side_takes_an_operations_closest_example() -> None:
    """An operation is as close to a request as its closest text: description or one example."""
    np = semantic_extra("numpy")
    axes = ["forget", "save", "search"]

    def embed(texts: Sequence[str]) -> Any:
        rows = np.array([[float(axis in text) for axis in axes] + [0.1] for text in texts])
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    plain = {"title": "Drop a record", "description": "", "examples": []}
    with_examples = {"title": "Drop a record", "description": "", "examples": ["save this", "forget that"]}
    index = SemanticIndex(embed, [capability_texts(plain), capability_texts(with_examples), ["search it"]])
    unrelated, closest, other = index.scores("forget my address")
    assert closest == pytest.approx(float(embed(["forget that"])[0] @ embed(["forget my address"])[0]))
    assert closest > other and closest > unrelated and capability_texts(plain) == ["Drop a record"]


def test_the_examples_train_a_classifier_that_outvotes_one_stray_close_example() -> None:
    """"Forget" sits among the examples of one operation and beside one stray example of another:
    the nearest phrase picks the stray one, the classifier the operation whose examples agree."""
    np = semantic_extra("numpy")
    vectors = {
        "forget it": (1.0, 0.2, 0.0),
        "Forget": (1.0, 0.0, 0.3), "drop it": (1.0, 0.4, 0.1), "remove it": (1.0, 0.3, 0.3), "erase it": (0.9, 0.5, 0.0),
        "Save": (0.0, 1.0, 0.2), "keep it": (0.1, 1.0, 0.0), "note it": (0.0, 0.9, 0.4), "stray": (1.0, 0.2, 0.0),
    }  # fmt: skip

    def embed(texts: Sequence[str]) -> Any:
        rows = np.array([vectors[text] for text in texts])
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    texts = [["Forget", "drop it", "remove it", "erase it"], ["Save", "keep it", "note it", "stray"]]
    forget, save = SemanticIndex(embed, texts).scores("forget it")
    nearest_forget, nearest_save = SemanticIndex(embed, texts, intents=False).scores("forget it")
    assert nearest_save > nearest_forget  # the stray example is the closest text
    assert forget > save and forget == pytest.approx(nearest_save)  # the winner gets the best similarity


def test_a_catalog_without_examples_ranks_as_before_the_classifier() -> None:
    """A vendor spec has no examples: nothing trains, and its hybrid is the nearest-text one."""
    np = semantic_extra("numpy")

    def embedder(texts: Sequence[str]) -> Any:
        rows = np.array([[(hash(word) % 7) + 1.0 for word in (text + " x y z").split()[:4]] for text in texts])
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    bare = [{**c, "examples": []} for c in CAPABILITIES if c["policy"]["expose"]]
    served = CapabilitySearch(bare, embedder=embedder)
    before = CapabilitySearch(bare, embedder=embedder, ranking=Ranking(semantic_intents=False))
    for request in (QUERY, "what do you know about my sister", "delete the note about parking"):
        ranked = [(m.capability["name"], m.score) for m in served.search(request, limit=10)]
        assert ranked == [(m.capability["name"], m.score) for m in before.search(request, limit=10)]


def test_each_capability_text_is_embedded_once_whatever_the_permission_sets() -> None:
    """The registry ranks each set of APIs a token reaches on its own index; the indexes share their
    texts' vectors, and every one ranks as one built alone on the same embedder."""
    np = semantic_extra("numpy")
    embedded: list[str] = []

    def embed(texts: Sequence[str]) -> Any:
        embedded.extend(texts)
        rows = np.array([[(hash(word) % 7) + 1.0 for word in (text + " x y z").split()[:4]] for text in texts])
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def reached(allows: Any) -> list[Any]:
        """Every operation of the APIs the caller may use some of."""
        sources = {c["source"] for c in registry.allowed(allows)}
        return [c for c in CAPABILITIES if c["source"] in sources and competes(c)]

    registry = CapabilityRegistry(CAPABILITIES, embedder=embed)
    sets = [{"memory:read"}, {"memory:read", "memory:write"}, {"memory:admin"}, {"memory:write"}]
    served = {}
    for granted in sets:
        allows = {*granted, "token:any"}.__contains__
        served[frozenset(granted)] = [(c.name, c.score) for c in registry.search(QUERY, allows=allows, limit=5).results]
    read = {text for granted in sets for c in reached({*granted, "token:any"}.__contains__) for text in capability_texts(c)}
    assert sorted(text for text in embedded if text != QUERY) == sorted(read)  # each once, though the sets overlap
    assert embedded.count(QUERY) == len(sets)  # queries are embedded at each search, never kept
    for granted in sets:
        allows = {*granted, "token:any"}.__contains__
        accept = lambda capability: capability["policy"]["expose"] and allows(capability["policy"]["permission"])  # noqa: E731
        alone = CapabilitySearch(reached(allows), embedder=embed).search(QUERY, limit=5, accept=accept)
        assert served[frozenset(granted)] == [(m.capability["name"], round(m.score, 4)) for m in alone]


@pytest.mark.parametrize("request_text", ["save a memory", "set user.preferences.theme to dark", "forget mem_01JA2B3C4D5E6F7G8H9J0K1M2N"])
def test_a_read_only_token_s_hybrid_search_is_not_sure_of_a_read_for_a_write_request(request_text: str) -> None:
    """The hybrid's scores are relative to the best of the index; the write that is the best still
    competes where the token cannot call it, so the read that comes first stays under the cut."""
    semantic_extra()
    registry = CapabilityRegistry(CAPABILITIES, embedder=load_embedder())
    read = {"memory:read"}.__contains__
    found = registry.search(request_text, allows=read, limit=3)
    assert found.results and all(card.permission == "memory:read" for card in found.results)
    assert (found.results[0].score or 0) < registry.confidence.threshold and found.confidence == 0.0
