"""A search's ``confidence``: the first score raised by its lead over the second, what an agent acts on."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_bank.capabilities.ranking.confidence import HYBRID, LEXICAL, Confidence
from memory_bank.capabilities.registry import CapabilityRegistry
from memory_bank.generated.catalog import CAPABILITIES

READ_WRITE = {"memory:read", "memory:write"}.__contains__
REGISTRY = CapabilityRegistry(CAPABILITIES)

scores = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
weights = st.sampled_from([0.0, 0.5, 2.0, LEXICAL.lead_weight, HYBRID.lead_weight, 32.0])


@given(first=scores, second=scores, weight=weights)
def test_confidence_is_in_0_1_at_most_the_first_score_and_rises_with_the_lead(first: float, second: float, weight: float) -> None:
    first, second = max(first, second), min(first, second)  # a ranking is best first
    judge = Confidence(weight, threshold=0.5)
    sure = judge.of([first, second])
    assert sure is not None and 0.0 <= sure <= round(first, 4)
    assert judge.of([first]) == round(first, 4)  # nothing else matched: the first score itself
    longer_lead = judge.of([first, second / 2]) or 0
    assert longer_lead > sure if second >= 0.01 and weight > 0 else longer_lead >= sure  # a longer lead, more sure
    assert judge.of([first, first]) == round(first / (1 + weight), 4)  # level with the second: a coin toss


def test_no_ranking_has_no_confidence() -> None:
    assert LEXICAL.of([]) is None
    assert REGISTRY.search("", allows=READ_WRITE).confidence is None  # a listing
    assert REGISTRY.search("\u00a7\u00a7", allows=READ_WRITE).confidence is None  # nothing matched


@pytest.mark.parametrize("request_text", ["save a memory", "search my memories for the dentist", "forget mem_01JA2B3C4D5E6F7G8H9J0K1M2N"])
def test_a_plain_request_is_sure_and_the_same_request_with_two_equal_operations_is_not(request_text: str) -> None:
    """A copy of the operation under another name (its name's one more word aside, the same text)
    runs level with it: which of the two was meant, nothing tells."""
    found = REGISTRY.search(request_text, allows=READ_WRITE, limit=1)
    assert len(found.results) == 1 and (found.confidence or 0) >= LEXICAL.threshold
    first = next(c for c in CAPABILITIES if c["name"] == found.results[0].name)
    twin = copy.deepcopy(first) | {"name": first["name"] + "Again"}
    doubled = CapabilityRegistry([*CAPABILITIES, twin]).search(request_text, allows=READ_WRITE, limit=2)
    assert {card.name for card in doubled.results} == {first["name"], twin["name"]}
    top, second = (card.score or 0 for card in doubled.results)
    assert top - second < 0.01
    weight = LEXICAL.lead_weight
    assert doubled.confidence == pytest.approx((top + weight * (top - second)) / (1 + weight), abs=2e-4)
    assert (doubled.confidence or 0) < (found.confidence or 0) / 2


def test_a_best_fit_the_caller_cannot_call_leaves_nothing_sure() -> None:
    found = REGISTRY.search("save a memory", allows={"memory:read"}.__contains__, limit=3)
    assert found.withheld is not None and found.results and found.confidence == 0.0


def test_the_rest_route_answers_the_confidence_as_the_tool_does(make_client) -> None:
    writer = make_client("acme", "ann", perms=["memory:read", "memory:write"])
    answer = writer.get("/v1/capabilities", params={"q": "save a memory", "limit": 1})
    assert answer.status_code == 200
    confidence = answer.json()["confidence"]
    assert confidence == REGISTRY.search("save a memory", allows=READ_WRITE, limit=1).confidence >= LEXICAL.threshold
    assert writer.get("/v1/capabilities").json()["confidence"] is None
