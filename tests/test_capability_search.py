"""Capability search: tokenising, ranking on a hand-made catalog, the API contract,
and a regression guard on the ToolAlpaca eval (real vendor specs)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_bank.capabilities.ranking import request_steps
from memory_bank.capabilities.ranking.fields import fields
from memory_bank.capabilities.ranking.question_fallback import asks_question
from memory_bank.capabilities.ranking.search import CapabilitySearch, Match, Ranking
from memory_bank.capabilities.registry import competes
from memory_bank.generated.catalog import CAPABILITIES
from memory_bank.textsearch.bm25 import BM25F
from memory_bank.textsearch.embeddings import load_embedder
from memory_bank.textsearch.fusion import fuse
from memory_bank.textsearch.tokenize import OPAQUE_VALUE, identifier_terms, phrases, split_words, stem
from support.requirements import need, semantic_extra

ROOT = Path(__file__).resolve().parents[1]
TOOLALPACA = ROOT.parent / "shared" / "evals" / "toolalpaca"


def capability(name: str, title: str, method: str, path: str, *, permission: str = "memory:read", **params: str) -> dict[str, Any]:
    """A catalog entry shaped like codegen's (annotations from the method), with query
    parameters ``name=description``."""
    query = {"type": "object", "properties": {p: {"type": "string", "description": d} for p, d in params.items()}}
    return {
        "name": name,
        "title": title,
        "description": title,
        "method": method,
        "path": path,
        "tags": [],
        "inputSchema": {"type": "object", "properties": {"query": query} if params else {}},
        "annotations": {"readOnlyHint": method in ("GET", "HEAD"), "destructiveHint": method == "DELETE"},
        "policy": {"category": "Test", "permission": permission, "expose": True},
        "source": "test.yaml",
    }


CATALOG = [
    capability("postMemory", "Save a memory", "POST", "/v1/memory", permission="memory:write", content="The text to remember"),
    capability("getMemorySearch", "Search memories", "GET", "/v1/memory/search", q="Full-text query"),
    capability("deleteMemory", "Delete a memory", "DELETE", "/v1/memory/{memory_id}", permission="memory:write"),
    capability("getMemoryHistory", "Version history of a memory", "GET", "/v1/memory/{memory_id}/history"),
    capability("getWeatherForecast", "Weather forecast for a city", "GET", "/forecast", city="City name"),
    capability("listPublicHolidays", "Public holidays of a country in a year", "GET", "/holidays/{countryCode}/{year}"),
]


QUERIES_WITHOUT_EXAMPLES = ["remember that I parked on level 3", "delete my memory", "weather in Paris", "holidays in France 2025", "history of a memory"]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("getIPAddress_v2/{userId}", ["get", "ip", "address", "v", "2", "user", "id"]),
        ("/api/v3/PublicHolidays/{countryCode}", ["api", "v", "3", "public", "holidays", "country", "code"]),
        ("snake_case-and.dots", ["snake", "case", "and", "dots"]),
        ("HTTPServer", ["http", "server"]),
        ("generate GUIDs", ["generate", "guids"]),
        ("listAPIsForUser", ["list", "apis", "for", "user"]),
        ("HTTPSettings", ["http", "settings"]),
        ("", []),
    ],
)
def test_split_words_breaks_identifiers_paths_and_acronyms(text: str, words: list[str]) -> None:
    assert split_words(text) == words


@given(
    st.text(st.characters(min_codepoint=ord("a"), max_codepoint=ord("z")), max_size=8),
    st.text(st.characters(min_codepoint=ord("A"), max_codepoint=ord("Z")), min_size=2, max_size=6),
    st.sampled_from(["", "For", "ById"]),
)
def test_an_acronym_s_plural_stays_one_word(before: str, acronym: str, after: str) -> None:
    """"GUIDs" is the plural of GUID, not "GUI" + "Ds": a request's "generate GUIDs" must
    meet ``BulkGenerateGuids``, whatever the acronym and what is glued around it."""
    words = split_words(before + acronym + "s" + after)
    assert f"{acronym.lower()}s" in words
    assert words[-len(split_words(after)) or len(words) :] == split_words(after)


ALNUM = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
#: Opaque values as people paste them: UUIDs, prefixed ULIDs, tracking numbers, IMDb ids.
opaque_values = st.one_of(
    st.uuids().map(str),
    st.text(st.sampled_from("0123456789ABCDEFGHJKMNPQRSTVWXYZ"), min_size=16, max_size=26)
    .filter(lambda v: sum(c.isdigit() for c in v) >= 4 and sum(c.isalpha() for c in v) >= 2)
    .map(lambda v: f"mem_{v}"),
    st.from_regex(r"[A-Z]{2}[0-9]{9}[A-Z]{2}", fullmatch=True),
    st.from_regex(r"tt[0-9]{7}", fullmatch=True),
)
plain_words = st.lists(st.sampled_from(["delete", "the", "memory", "show", "history", "of", "rate", "v2", "python3.8", "2024-05-01"]), max_size=4).map(" ".join)


@given(plain_words, opaque_values, plain_words, st.sampled_from(["", ".", ",", "?"]))
def test_an_opaque_value_is_one_term_and_leaves_the_words_around_it_alone(before: str, value: str, after: str, stop: str) -> None:
    """Split into words, ``mem_01JA2B3C...`` gave a dozen one- and two-letter "words" that
    matched fragments of unrelated text; it is one term, whatever the value."""
    assert identifier_terms(f"{before} {value}{stop} {after}") == [*identifier_terms(before), OPAQUE_VALUE, *identifier_terms(after)]
    assert phrases(identifier_terms(f"delete {value} now")) == []  # its neighbours say nothing of it


@pytest.mark.parametrize("text", ["v2", "python3.8", "x86_64", "2024-05-01", "iso8601", "9:30", "HTTP2", "COVID-19", "e.g. i.e."])
def test_versions_dates_and_short_codes_stay_words(text: str) -> None:
    assert OPAQUE_VALUE not in identifier_terms(text)


def test_split_words_handles_non_ascii_camel_case() -> None:
    assert split_words("ÉtatCivil naïve") == ["état", "civil", "naïve"]


def test_terms_drop_function_words_and_stem() -> None:
    assert identifier_terms("Can you get me the public holidays of Countries?") == ["get", "public", "holiday", "countri"]


@pytest.mark.parametrize(
    ("words", "same"),
    [(("holiday", "holidays"), True), (("nutrition", "nutritional"), True), (("convert", "converting"), True), (("user", "use"), False)],
)
def test_stemming_folds_inflections_only(words: tuple[str, str], same: bool) -> None:
    assert (stem(words[0]) == stem(words[1])) is same


def test_fields_keep_path_words_and_response_fields_apart() -> None:
    cyclic = {
        "type": "object",
        "properties": {"result": {"$ref": "#/$defs/Country"}},
        "$defs": {"Country": {"type": "object", "properties": {"officialName": {"description": "Official name"}, "borders": {"type": "array", "items": {"$ref": "#/$defs/Country"}}}}},
    }
    entry = capability("getCountry", "Country info", "GET", "/countries/{countryCode}/info", code="ISO code") | {"outputSchema": cyclic}
    got = fields(entry)
    assert got["path"] == ["countri", "info"]
    assert got["params"] == ["code"]
    assert got["returns"] == ["result", "offici", "name", "offici", "name", "border"]
    assert got["description"] == []  # a copy of the title is not counted twice


def test_examples_are_a_field_of_their_own_that_reaches_an_operation_its_text_does_not_name() -> None:
    noted = capability("postNote", "Create a note", "POST", "/notes") | {"examples": ["jot down that the meeting moved"]}
    words = identifier_terms("jot down that the meeting moved")
    assert fields(noted)["examples"] == [*words, *phrases(words)]
    assert fields(CATALOG[0])["examples"] == []
    ranked = CapabilitySearch([*CATALOG, noted]).search("jot down that the meeting moved to Friday")
    assert ranked[0].capability["name"] == "postNote"
    assert CapabilitySearch([*CATALOG, noted | {"examples": []}]).search("jot down that the meeting moved") == []


def test_example_requests_count_a_word_over_requests_not_operations() -> None:
    """Every operation of a small catalog mentions the action words somewhere, so their idf
    over operations is near 0; over the examples, "delete" is specific, and the operation
    most of whose examples use it wins over one that shows the request's id more often."""
    ids = ["mem_01J9ZK3QF7R2XW8M4T6B5N", "mem_01HZX8Y2KQ4V7N3M9P0R5T", "mem_01JA2B3C4D5E6F7G8H9J0K"]
    read = capability("getNote", "Get a note", "GET", "/notes/{id}") | {
        "examples": [f"show me {i}" for i in ids] + [f"read note {ids[0]}", "when was this note deleted?", "open the note"]
    }
    delete = capability("deleteNote", "Remove a note", "DELETE", "/notes/{id}", permission="memory:write") | {
        "examples": ["delete that note", "delete the note about the offsite", f"please delete {ids[1]}", "delete it"]
    }
    history = capability("getNoteHistory", "Versions of a note", "GET", "/notes/{id}/history") | {
        "examples": ["what did this note say before", "show the versions of the note", "was it deleted or changed"]
    }
    catalog = [read, delete, history]
    request = "delete mem_01JQ7RK3M4N5P6Q7R8S9T0V1W2"
    assert CapabilitySearch(catalog).search(request)[0].capability["name"] == "deleteNote"
    assert CapabilitySearch(catalog, ranking=Ranking(example_weight=0.0)).search(request)[0].capability["name"] == "getNote"


def test_in_example_requests_a_state_is_not_an_order() -> None:
    """Reads' examples say "saved" ("what's saved on the trip?"); a save's say "save". This is the
    counted score's property; the classifier (switched off here) reads characters, where the two
    are near, and in a catalog this small it follows the four "saved"."""
    assert identifier_terms("what is saved on it", participles=True) == ["save~ed"]
    assert identifier_terms("what is saved on it") == identifier_terms("save it") == ["save"]
    listing = capability("listNotes", "List notes", "GET", "/notes") | {
        "examples": ["show everything saved", "list the saved notes", "what's saved on the trip?", "give me the saved items"]
    }
    saving = capability("postNote", "Create a note", "POST", "/notes", permission="memory:write") | {
        "examples": ["note that the gate is B12", "save this: lunch is at 1", "remember that I like tea"]
    }
    counted = Ranking(example_intents=False)
    assert CapabilitySearch([listing, saving], ranking=counted).search("save a note")[0].capability["name"] == "postNote"


@given(st.lists(st.sampled_from(CATALOG), min_size=1, max_size=6, unique_by=lambda c: c["name"]), st.sampled_from(QUERIES_WITHOUT_EXAMPLES))
def test_a_catalog_without_examples_ranks_as_without_the_signal(catalog: list[dict[str, Any]], request: str) -> None:
    with_signal, without = (CapabilitySearch(catalog, ranking=Ranking(example_weight=w)).search(request) for w in (0.35, 0.0))
    assert with_signal == without


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("remember that I like tea", "postMemory"),
        ("search my memories", "getMemorySearch"),
        ("what will the weather be in Oslo", "getWeatherForecast"),
        ("public holidays in France 2025", "listPublicHolidays"),
        ("previous versions of a memory", "getMemoryHistory"),
        ("delete a memory I saved", "deleteMemory"),
    ],
)
def test_the_right_operation_ranks_first(query: str, expected: str) -> None:
    assert CapabilitySearch(CATALOG).search(query)[0].capability["name"] == expected


ANSWER_ENGINE = capability("getShortAnswer", "Get a short answer", "GET", "/result", i="The input for your question")
ANSWER_ENGINE["description"] = "Query the knowledge engine and get a short answer to your question."


@pytest.mark.parametrize("request_text", ["How many moons does Jupiter have?", "what is the square root of 625", "Who wrote Dune?"])
def test_a_question_no_operation_names_reaches_the_question_answering_one(request_text: str) -> None:
    assert asks_question(request_text)
    assert CapabilitySearch([*CATALOG, ANSWER_ENGINE]).search(request_text)[0].capability["name"] == "getShortAnswer"


def test_the_fallback_needs_a_question_and_never_beats_real_evidence() -> None:
    index = CapabilitySearch([*CATALOG, ANSWER_ENGINE])
    assert not asks_question("moons of Jupiter") and index.search("moons of Jupiter") == []
    for request_text in ("What will the weather be in Oslo?", "How do I remove a memory?", "Which public holidays has France in 2025?"):
        ranked = [m.capability["name"] for m in index.search(request_text, limit=10)]
        assert ranked[0] != "getShortAnswer" and "getShortAnswer" in ranked, (request_text, ranked)


def test_accept_filters_before_the_limit() -> None:
    index = CapabilitySearch(CATALOG)
    assert index.search("memory", limit=1)[0].capability["policy"]["permission"] == "memory:write"
    readable = index.search("memory", limit=2, accept=lambda c: c["policy"]["permission"] == "memory:read")
    assert len(readable) == 2
    assert all(m.capability["policy"]["permission"] == "memory:read" for m in readable)


def test_scores_are_in_unit_range_and_descending() -> None:
    matches = CapabilitySearch(CATALOG).search("delete a memory by id", limit=10)
    assert matches and all(isinstance(m, Match) for m in matches)
    assert all(0.0 <= m.score <= 1.0 for m in matches)
    assert [m.score for m in matches] == sorted((m.score for m in matches), reverse=True)


def test_bm25f_scores_are_a_share_of_the_query_ceiling() -> None:
    index = BM25F([{"title": ["holiday"] * 50}, {"title": ["weather"]}, {"body": ["holiday"]}], {"title": 3.0, "body": 1.0})
    strong, none, weak = index.scores(["holiday"])
    assert 0.9 < strong < 1.0 and none == 0.0 and 0.0 < weak < strong  # saturates below 1; title outweighs body
    assert index.scores(["holiday", "unknownword"])[0] < strong / 2 + 0.01  # a word nobody has still counts against


def test_a_term_the_query_repeats_counts_per_mention() -> None:
    index = BM25F([{"title": ["order"]}, {"title": ["family"]}], {"title": 1.0})
    by_order, by_family = index.scores(["order", "family", "order"])
    assert by_order == pytest.approx(2 * by_family) and by_order + by_family == pytest.approx(index.scores(["order"])[0])


@pytest.mark.parametrize("query", ["", "   ", "the of and", "zzzqqq"])
def test_queries_without_usable_terms_return_nothing(query: str) -> None:
    assert CapabilitySearch(CATALOG).search(query) == []


def test_empty_catalog() -> None:
    index = CapabilitySearch([])
    assert len(index) == 0 and index.search("anything") == []
    assert len(CapabilitySearch(CATALOG)) == len(CATALOG)


def concept_embedder(texts: Sequence[str]) -> list[list[float]]:
    """A stand-in model that knows one thing: questions and answers are alike; weather is not."""
    def vector(text: str) -> list[float]:
        text = text.lower()
        return [1.0, 0.0] if any(w in text for w in ("answer", "square root", "capital of")) else [0.0, 1.0]

    return [vector(t) for t in texts]


def test_semantic_signal_finds_operations_sharing_no_word_with_the_request() -> None:
    semantic_extra("numpy")
    catalog = [*CATALOG, capability("getShortAnswer", "Get a short answer to a question", "GET", "/result")]
    query = "square root of 625"
    assert CapabilitySearch(catalog).search(query) == []  # no shared word at all
    matches = CapabilitySearch(catalog, embedder=concept_embedder).search(query, limit=3)
    assert matches[0].capability["name"] == "getShortAnswer"
    assert all(0.0 <= m.score <= 1.0 for m in matches)


def test_semantic_fusion_keeps_the_lexical_winner_when_embeddings_tie() -> None:
    semantic_extra("numpy")
    index = CapabilitySearch(CATALOG, embedder=concept_embedder)  # every catalog entry looks alike to it
    assert index.search("weather forecast for Oslo")[0].capability["name"] == "getWeatherForecast"


def test_fuse_is_a_convex_combination_of_max_normalised_scores() -> None:
    assert fuse([0.2, 0.1, 0.0], [0.5, 1.0, 0.25], 0.5, 0.0) == pytest.approx([0.75, 0.75, 0.125])
    assert fuse([0.2, 0.1, 0.0], [0.5, 1.0, 0.25], 0.5, 0.15) == pytest.approx([0.75, 0.75, 0.125])  # best above the floor
    assert fuse([0.0, 0.0], [0.0, 0.0]) == [0.0, 0.0]


def test_fuse_never_rounds_past_one() -> None:
    """Found by the LoCoMo harness: without the clamp the middle score is 1.0000000000000002."""
    fused = fuse([0.1309436820918124, 0.4441833092739258, 0.14032683186228911], [0.7725091351313866, 0.9745523047668578, 0.25274377045530383], 0.2, 0.1)
    assert max(fused) == 1.0


def test_fuse_does_not_stretch_a_weak_lexical_best_to_full_weight() -> None:
    """A best lexical match covering 1% of the request is noise: the embedding decides."""
    weak_lexical, semantic = [0.01, 0.0], [0.3, 0.6]
    assert fuse(weak_lexical, semantic, 0.3, 0.0) == pytest.approx([0.85, 0.3])  # stretched: noise wins
    fused = fuse(weak_lexical, semantic, 0.3, 0.1)
    assert fused == pytest.approx([0.7 * 0.1 + 0.3 * 0.5, 0.3]) and fused[1] > fused[0]


def test_fusion_parameters_are_per_index() -> None:
    semantic_extra("numpy")
    catalog = [*CATALOG, capability("getShortAnswer", "Get a short answer to a question", "GET", "/result")]
    query = "what is the capital of the weather forecast"  # lexical: the forecast; the embedding: the answer
    lexical_heavy = CapabilitySearch(catalog, embedder=concept_embedder, semantic_weight=0.1, lexical_floor=0.0)
    semantic_heavy = CapabilitySearch(catalog, embedder=concept_embedder, semantic_weight=0.9, lexical_floor=0.0)
    assert lexical_heavy.search(query)[0].capability["name"] == "getWeatherForecast"
    assert semantic_heavy.search(query)[0].capability["name"] == "getShortAnswer"


def test_eval_cross_validates_the_fusion_leaving_one_spec_out() -> None:
    semantic_extra("numpy")
    sys.path.insert(0, str(ROOT / "evals"))
    from capability_search import FUSION_GRID, Query, caching, cross_validate

    calls: list[int] = []

    def counting(texts: Sequence[str]) -> list[list[float]]:
        calls.append(len(texts))
        return concept_embedder(texts)

    catalog = [c | {"source": "memory.yaml"} for c in CATALOG[:4]] + [c | {"source": "world.yaml"} for c in CATALOG[4:]]
    queries = [
        Query("m1", "memory.yaml", "delete a memory", frozenset({"DELETE /v1/memory/{memory_id}"}), "DELETE /v1/memory/{memory_id}"),
        Query("w1", "world.yaml", "weather in Oslo", frozenset({"GET /forecast"}), "GET /forecast"),
    ]
    metrics, chosen = cross_validate(queries, catalog, counting)
    assert set(chosen) == {"memory.yaml", "world.yaml"} and set(chosen.values()) <= set(FUSION_GRID)
    assert metrics["hit@1"] == metrics["mrr"] == 1.0
    assert sum(calls) == len(catalog) + len(queries)  # every text embedded once across the whole grid
    assert len(caching(concept_embedder)(["a", "b", "a"])) == 3


def test_eval_keeps_the_expose_flags_of_a_spec_that_declares_them() -> None:
    sys.path.insert(0, str(ROOT / "evals"))
    from capability_search import load_catalog

    searchable = {c["name"] for c in load_catalog(ROOT / "openapi", ["memory.yaml"])}
    served = {c["name"] for c in CAPABILITIES if c["source"] == "openapi/memory.yaml" and competes(c)}
    assert searchable == served  # what the server ranks of that spec (exposed or not), no more
    need("a vendor spec", TOOLALPACA.is_dir(), f"eval data not found at {TOOLALPACA}")
    assert len(load_catalog(TOOLALPACA, ["specs/real_Fruityvice.json"])) > 0  # undeclared: loaded whole


def test_packaged_model_loads_offline() -> None:
    """Only where the semantic extra is installed: the model ships in the package."""
    semantic_extra()
    embed = load_embedder()
    assert embed is not None
    vectors = embed(["public holidays in France", "national holidays of a country", "convert currency"])
    assert len(vectors) == 3
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])


@pytest.mark.parametrize(
    ("source", "floors"),
    [
        # measured hit@5 0.990, final@1 0.792, MRR 0.888; the plain-BM25 floor is 0.89 / 0.60 / 0.75
        ("toolalpaca", {"hit@5": 0.97, "final@1": 0.77, "mrr": 0.87}),
        # measured hit@5 0.946, MRR 0.879 (0.934 / 0.865 while "GUIDs" split into "gui" + "ds")
        ("toolbench", {"hit@5": 0.94, "mrr": 0.87}),
    ],
)
def test_vendor_sources_keep_their_measured_level(source: str, floors: dict[str, float]) -> None:
    """Regression guard a little under the measured figures; the eval prints every metric."""
    root = TOOLALPACA.parent / source
    need(f"the {source} guard", (root / "queries.jsonl").exists(), f"eval data not found at {root}")
    sys.path.insert(0, str(ROOT / "evals"))
    from capability_search import evaluate, load_catalog, memory_bank_ranker, read_queries

    queries = read_queries(root / "queries.jsonl")
    rank, _ = memory_bank_ranker(load_catalog(root, sorted({q.spec for q in queries})))
    metrics = evaluate(queries, rank, k=5)
    assert all(metrics[name] >= floor for name, floor in floors.items()), metrics


def test_a_quoted_operation_name_still_finds_the_operation() -> None:
    assert CapabilitySearch(CATALOG).search('run "getMemoryHistory"')[0].capability["name"] == "getMemoryHistory"
    # A name in quotes orders nothing: a deletion comes first only when the request orders it.
    assert "deleteMemory" in [m.capability["name"] for m in CapabilitySearch(CATALOG).search('"deleteMemory"', limit=3)]
    assert CapabilitySearch(CATALOG).search('delete it with "deleteMemory"')[0].capability["name"] == "deleteMemory"


ADDRESS_API = [
    capability("verifyAddress", "Verify that a postal address is valid", "POST", "/addresses/verify", address="The postal address"),
    capability("standardizeAddress", "Standardize a postal address", "POST", "/addresses/standardize", address="The postal address"),
    capability("listLetters", "List letters sent", "GET", "/letters"),
]


@pytest.mark.parametrize(
    ("request_text", "tail"),
    [
        ("verify this address and then standardize it", "standardize it"),
        ("Get the rate. Also, set an alert. Finally, list alerts", "list alerts"),
        ("verify this address", None),
        ("verify this address, then", None),
        ("Convert 5 EUR. Also, please set an alert if the rate goes above 0.9.", "please set an alert"),
        ("Get the rate; then, if it drops, set an alert", "set an alert"),
        ("Check its score? If it is normal, report it as spam", "report it as spam"),
        ("If it rains, what is the forecast?", None),
    ],
)
def test_the_last_step_is_the_text_after_the_last_step_word(request_text: str, tail: str | None) -> None:
    assert request_steps.last_step(request_text) == tail


def test_a_request_of_several_steps_gets_its_last_steps_operation_first() -> None:
    index = CapabilitySearch(ADDRESS_API)
    one_step = [m.capability["name"] for m in index.search("verify this postal address is valid and standard")]
    assert one_step[:2] == ["verifyAddress", "standardizeAddress"]
    two_steps = index.search("verify this postal address is valid and then standardize it", limit=1)
    assert [m.capability["name"] for m in two_steps] == ["standardizeAddress"]
    ranked = index.search("verify this postal address is valid and then standardize it")
    assert [m.capability["name"] for m in ranked[:2]] == ["standardizeAddress", "verifyAddress"]
    assert [m.score for m in ranked] == sorted((m.score for m in ranked), reverse=True)


def test_a_last_step_is_ranked_by_its_action_not_its_condition(monkeypatch: pytest.MonkeyPatch) -> None:
    """The condition names the rate twice; the action is an alert."""
    rates = [
        capability("getRate", "Exchange rate of a currency pair", "GET", "/rates", pair="Currency pair, e.g. EUR/GBP"),
        capability("createAlert", "Create an alert", "POST", "/alerts", threshold="Price that triggers the alert"),
    ]
    request_text = "Show the EUR/GBP rate, then create an alert if the exchange rate of this currency pair goes above 0.9"
    assert CapabilitySearch(rates).search(request_text)[0].capability["name"] == "createAlert"
    monkeypatch.setattr(request_steps, "_action", lambda step: step)
    assert CapabilitySearch(rates).search(request_text)[0].capability["name"] == "getRate"


def test_the_last_step_moves_nothing_that_another_api_answers() -> None:
    other_api = {**capability("standardizeAddress", "Standardize a postal address", "POST", "/standardize"), "source": "other.yaml"}
    index = CapabilitySearch([*ADDRESS_API[:1], other_api])
    ranked = index.search("verify this postal address is valid and then standardize it")
    assert ranked[0].capability["name"] == "verifyAddress"



EXPOSED = [c for c in CAPABILITIES if c["policy"]["expose"]]
EXPOSED_INDEX = CapabilitySearch(EXPOSED)


@pytest.mark.parametrize("name", [c["name"] for c in EXPOSED])
@pytest.mark.parametrize("spelling", [str, str.lower, str.upper, lambda n: f"  {n}\n"])
def test_a_request_that_is_an_operation_s_name_gets_that_operation_first_and_sure(name: str, spelling: Any) -> None:
    """A hostile pass found "postMemory" ranked postMemoryFeedback first and "getMemorySearch" getMemory."""
    first = EXPOSED_INDEX.search(spelling(name), limit=3)[0]
    assert (first.capability["name"], first.score) == (name, 1.0)


def test_a_named_operation_the_caller_may_not_use_is_not_put_first() -> None:
    """Then the rest rank as they would without the rule."""
    ablated = CapabilitySearch(EXPOSED, ranking=Ranking(exact_name=False))
    for name in (c["name"] for c in EXPOSED):
        others = EXPOSED_INDEX.search(name, limit=5, accept=lambda c: c["name"] != name)
        assert others == ablated.search(name, limit=5, accept=lambda c: c["name"] != name)
        assert all(m.capability["name"] != name for m in others)
