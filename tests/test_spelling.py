"""Misspelt request words corrected to the catalog's words (textsearch/spelling.py), alone and in
the capability search."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from memory_bank.capabilities.ranking.fields import written_texts
from memory_bank.capabilities.ranking.search import CapabilitySearch, Ranking
from memory_bank.generated.catalog import CAPABILITIES
from memory_bank.textsearch.spelling import SHORTEST, Spelling, english

EXPOSED = [c for c in CAPABILITIES if c["policy"]["expose"]]
WRITTEN = [text for c in EXPOSED for text in written_texts(c)]
SPELLING = Spelling(WRITTEN)
KNOWN = sorted({w.lower() for text in WRITTEN for w in re.findall(r"[^\W\d_]+", text)})
LETTERS = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)*")
ID = "mem_01JA2B3C4D5E6F7G8H9J"


def osa_distance(a: str, b: str) -> int:
    """Optimal string alignment distance, the textbook dynamic programme (independent of the module's edits)."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


@st.composite
def one_edit(draw: st.DrawFn) -> tuple[str, str]:
    """A known word of the catalog and a string one edit from it."""
    word = draw(st.sampled_from([w for w in KNOWN if len(w) >= SHORTEST]))
    at = draw(st.integers(0, len(word) - 1))
    letter = draw(st.sampled_from("abcdefghijklmnopqrstuvwxyz"))
    edit = draw(st.sampled_from(["delete", "swap", "substitute", "insert"]))
    edited = {
        "delete": word[:at] + word[at + 1 :],
        "swap": word[:at] + word[at + 1 : at + 2] + word[at] + word[at + 2 :],
        "substitute": word[:at] + letter + word[at + 1 :],
        "insert": word[:at] + letter + word[at:],
    }[edit]
    return word, edited


@settings(max_examples=300, deadline=None)
@given(one_edit())
def test_a_word_one_edit_from_the_catalog_becomes_a_catalog_word_one_edit_away(pair: tuple[str, str]) -> None:
    word, misspelt = pair
    assume(len(misspelt) >= SHORTEST and misspelt not in KNOWN and misspelt not in english())
    corrected = SPELLING.correct(misspelt)
    assert corrected.lower() in KNOWN and osa_distance(misspelt, corrected.lower()) == 1


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_only_misspelt_words_change(text: str) -> None:
    """Whatever the text: what is not a word stays as it is, in place, and a word either stays or
    becomes a catalog word at one edit; the catalog's and English words never change."""
    corrected = SPELLING.correct(text)
    assert LETTERS.split(corrected) == LETTERS.split(text)
    for before, after in zip(LETTERS.findall(text), LETTERS.findall(corrected), strict=True):
        lower = before.lower()
        if lower in KNOWN or lower in english() or before.isupper() or len(lower) < SHORTEST:
            assert after == before
        elif after != before:
            assert after.lower() in KNOWN and osa_distance(lower, after.lower()) == 1


def test_names_english_words_acronyms_and_contractions_are_kept() -> None:
    for text in ("Halvorsen", "Skyscanner", "contract", "March", "right", "HKPA", "wasn't", "doesn\u2019t", "漢字漢字漢字"):
        assert SPELLING.correct(text) == text


ON = CapabilitySearch(EXPOSED)


def test_typos_in_the_words_that_say_what_a_request_wants() -> None:
    off = CapabilitySearch(EXPOSED, ranking=Ranking(spelling=False))
    request = "that memroy was helpfull"
    assert ON.search(request, limit=1)[0].capability["name"] == "postMemoryFeedback"
    assert [m.capability["name"] for m in off.search(request, limit=1)] != ["postMemoryFeedback"], "the typo must matter"


@pytest.mark.parametrize(
    "request_text",
    [
        "crear una memoria nueva",  # es "create" -> "clear"
        "guarda esta frase",  # es "phrase" -> "erase"
        "deleite de chocolate",  # es "delight" -> "delete"
        "recette de purée",  # fr -> "purge"
        "la foret de Fontainebleau",  # fr -> "forget"
        "Wipf called about the invoice",  # a surname -> "wipe"
        "Forgey is my dentist",
        "the Eraso account",
        f"delte {ID}",  # a misspelt order is no plain request to delete either
    ],
)
def test_a_correction_never_makes_a_deletion_come_first(request_text: str) -> None:
    """Safety reads the request as written: a word of another language or a name one edit from a
    removal word is corrected for ranking, but a deletion comes first only when asked for plainly."""
    first = ON.search(request_text, limit=1)
    assert not first or not (first[0].capability.get("annotations") or {}).get("destructiveHint")


def test_pieces_of_identifiers_and_of_split_words_are_kept() -> None:
    """A run of letters that a digit or a combining mark touches, or a letter across a zero-width
    character, is part of something larger: corrected alone it became another word ("mory" of a
    decomposed "mémory" read as "more", "forg" of "forg\u200dt" as "for")."""
    for text in ("me\u0301mory", "dele\u0301te", "forg\u200dt", "m3mroy", "delet3", "v2delet", "6u6VJFyZ9fPrzHUL1OB70", "नमस्ते"):
        assert SPELLING.correct(text) == text
    # a format character at a word's edge, with no letter beyond it, glues nothing
    assert SPELLING.correct("delet\u200b the memroy") == "delete\u200b the memory"
    assert SPELLING.correct("\u200fdelet memroy\u200f") == "\u200fdelete memory\u200f"


def test_a_misspelt_operation_name_keeps_its_camel_case() -> None:
    """Lower-cased, "deleteMemroy" corrected was the one term "deletememory", which matches no
    indexed term: the operation it names dropped out of the results."""
    assert SPELLING.correct("call deleteMemroy") == "call deleteMemory"
    assert SPELLING.correct("use listTokns") == "use listTokens"
    on = CapabilitySearch(EXPOSED)
    assert "deleteMemory" in [m.capability["name"] for m in on.search("call deleteMemroy", limit=3)]
