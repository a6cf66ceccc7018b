"""A request's misspelt words, corrected to the words an index knows.

Agents pass their users' words on, typos and all ("remmeber", "usefull", "serach"), and a
word no indexed text has matches nothing: the request loses the one word that said what it
wants. The correction is the classic one of spelling correctors (Norvig's): a word that is
neither the index's nor an English word (:func:`english`), and long enough to be a misspelling
rather than another short word (``SHORTEST``), becomes the known word at one edit (a
deletion, a swap of neighbours, a substitution or an insertion), the one the indexed text uses
most when several are. An acronym and a contraction are taken as written, and so is a run of
letters that a digit or a combining mark touches, or a letter across an invisible format
character: it is a piece of an identifier ("delet3", ``6u6VJFyZ9fPr``) or of a word the
regular expression splits ("me\u0301mory", "forg\u200dt", a Devanagari word), and its pieces
corrected would be other words ("mory" read as "more", "forg" as "for"). A word with no such neighbour, a name or a content word ("Skyscanner",
"Halvorsen"), is kept as written; so is every English word, since "contract" is not a typo of
an index's "contact", nor "March" of "match".

The known words at one edit are found as Norvig's corrector finds them: every string one
edit away from the request's word, over the letters the known words use, looked up among
them. That costs a few hundred lookups for a word that needs it and nothing at indexing, where
a deletion index (SymSpell's) over a vendor's thousands of words took a quarter of a second.

Measurements and the choice of ``SHORTEST``: ``docs/decisions/0035-spelling-and-value-shapes.md``;
why it came back: ``docs/decisions/0048-spelling-returns.md``.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from functools import cache, lru_cache

__all__ = ["LONGEST", "MOST_LETTERS", "SHORTEST", "Spelling", "english"]

#: The shortest word that is corrected; shorter ones are too often another word at one edit.
SHORTEST = 4
#: The longest: a longer run of letters is no misspelt word (a sentence of a script written
#: without spaces, a hash), and its edits would be many.
LONGEST = 30
#: How many letters an edit may put in: the ones the known words use most, which is all of
#: them for an alphabet, and bounds the edits of a word for a catalog in a script of thousands.
MOST_LETTERS = 64
#: A word of indexed text: a run of letters.
_LETTERS = re.compile(r"[^\W\d_]+")
#: A word of a request: a run of letters, with the apostrophes of a contraction ("wasn't" is
#: one word, not a misspelt "wasn").
_REQUEST_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
#: The categories that glue a run of letters to more of a word or an identifier: digits and the
#: combining marks (an accent written apart, a vowel sign).
_GLUE = frozenset({"Nd", "Mn", "Mc", "Me"})


@cache
def english() -> frozenset[str]:
    """Lower-case English words of ``SHORTEST`` letters or more (pyspellchecker's word list, drawn
    from subtitles): a word in it is a word, not a misspelling, whether or not an index has it.
    A set of the words alone, since their counts would triple what it holds (11 MB against 39)."""
    from spellchecker import SpellChecker

    words = SpellChecker(language="en", distance=1).word_frequency.dictionary
    return frozenset(word for word in words if len(word) >= SHORTEST and word.isalpha())


def _edits(word: str, letters: str) -> set[str]:
    """Every string one deletion, swap of neighbours, substitution or insertion from ``word``."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    return {
        *(a + b[1:] for a, b in splits if b),
        *(a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1),
        *(a + c + b[1:] for a, b in splits if b for c in letters),
        *(a + c + b for a, b in splits for c in letters),
    }


def _glued(text: str, start: int, end: int) -> bool:
    """Whether the run of letters ``text[start:end]`` is part of something larger: a digit or a
    combining mark touches it, or a letter does across invisible format characters (a zero-width
    joiner or space, a bidi mark, a soft hyphen), which a reader does not see."""
    before, after = start - 1, end
    while before >= 0 and unicodedata.category(text[before]) == "Cf":
        before -= 1
    while after < len(text) and unicodedata.category(text[after]) == "Cf":
        after += 1
    return any(
        text[at].isalpha() or unicodedata.category(text[at]) in _GLUE
        for at in (before, after)
        if 0 <= at < len(text)
    )


class Spelling:
    """The words of some texts, and the correction of a request's words to them."""

    def __init__(self, texts: Iterable[str]) -> None:
        self._uses: Counter[str] = Counter()
        #: A known word that is an identifier in camelCase ("deleteMemory"), as written: the
        #: correction of "deleteMemroy" keeps the humps the tokenizer splits the words at.
        self._humped: dict[str, str] = {}
        for text, repeats in Counter(texts).items():  # a spec repeats its field descriptions hundreds of times
            for word in _LETTERS.findall(text):
                self._uses[word.lower()] += repeats
                if any(a.islower() and b.isupper() for a, b in zip(word, word[1:])):
                    self._humped.setdefault(word.lower(), word)
        letters: Counter[str] = Counter()
        for word, uses in self._uses.items():
            for letter in word:
                letters[letter] += uses
        self._letters = "".join(letter for letter, _ in letters.most_common(MOST_LETTERS))
        self._english = english()  # loaded with the index (0.2 s, once a process), not at a request
        #: One search reads its request several times (scores, then each ranking); a 2,000-character
        #: request of unknown words costs some 20 ms to correct.
        self._corrected = lru_cache(maxsize=256)(self._correct)

    def correct(self, text: str) -> str:
        """``text`` with each word the texts lack, of ``SHORTEST`` letters or more, replaced by
        the most used known word at one edit, when there is one."""
        return self._corrected(text)

    def _correct(self, text: str) -> str:
        def corrected(match: re.Match[str]) -> str:
            return match[0] if _glued(text, *match.span()) else self._word(match[0])

        return _REQUEST_WORD.sub(corrected, text)

    def _word(self, word: str) -> str:
        lower = word.lower()
        written_as_is = word.isupper() or not lower.isalpha()  # an acronym ("HKPA"), a contraction
        if written_as_is or not SHORTEST <= len(lower) <= LONGEST or lower in self._uses or lower in self._english:
            return word
        near = [known for known in _edits(lower, self._letters) if known in self._uses]
        if not near:
            return word
        best = max(near, key=lambda known: (self._uses[known], known))
        return self._humped.get(best, best)
