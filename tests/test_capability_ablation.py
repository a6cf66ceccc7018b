"""The ablation harness switches real parts of the ranker off, and judges them by one rule."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from memory_bank.capabilities.ranking.search import CapabilitySearch, Ranking

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "evals"), str(ROOT / "bench")]

from ablation import verdict, with_parameter  # noqa: E402
from capability_search import COMPONENTS, ablated  # noqa: E402


@pytest.mark.parametrize("name", COMPONENTS)
def test_every_component_is_a_real_switch_of_the_ranking(name: str) -> None:
    switched = ablated([name])
    assert switched != Ranking()
    assert ablated([name], switched) == switched  # switching off twice is switching off


def test_an_unknown_component_is_refused() -> None:
    with pytest.raises(ValueError, match="no component 'colour'"):
        ablated(["colour"])


def test_a_field_switched_off_no_longer_finds_what_only_it_holds() -> None:
    noted = {"name": "postNote", "title": "Create a note", "method": "POST", "path": "/notes", "examples": ["jot down that it moved"]}
    assert [m.capability["name"] for m in CapabilitySearch([noted]).search("jot it down")] == ["postNote"]
    assert CapabilitySearch([noted], ranking=ablated(["examples"])).search("jot it down") == []


def test_a_parameter_is_set_on_the_shipped_ranking() -> None:
    assert with_parameter("k1", 3.0) == Ranking(k1=3.0)
    assert with_parameter("title", 0.0).field_weights["title"] == 0.0
    assert with_parameter("title", 0.0).field_weights["name"] == Ranking().field_weights["name"]


@pytest.mark.parametrize(
    ("deltas", "expected"),
    [
        ((-0.01, -0.01, 0.0), "keep"),  # helps two, hurts none
        ((-0.01, -0.01, 0.003), "drop"),  # hurts one
        ((-0.01, 0.0, 0.001), "drop"),  # helps one only
        ((0.001, -0.002, 0.0), "inert"),  # within the tolerance everywhere
    ],
)
def test_a_component_stays_when_it_helps_two_sources_and_hurts_none(deltas: tuple[float, ...], expected: str) -> None:
    assert verdict(deltas, tolerance=0.002) == expected
