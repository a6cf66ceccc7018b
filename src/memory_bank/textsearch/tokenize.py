"""Turn API text (identifiers, paths, prose) into search terms.

Operation names and paths glue words together (``getUserById``, ``/ip_addresses``,
``IPAddress``); queries are prose ("holidays in France"). Both sides must reduce to
the same terms or no ranker can match them, so there is one function for both:
:func:`terms` (split, drop function words, stem).

Stemming is Snowball's English (Porter2) stemmer from ``snowballstemmer``: pure
Python, maintained, and the standard light stemmer of IR; it folds "holidays" /
"holiday", "countries" / "country", "nutritional" / "nutrition". Stems are cached:
API vocabularies are small, so after indexing nearly every query word is a hit.
"""

from __future__ import annotations

import re
from functools import lru_cache

import snowballstemmer

__all__ = ["STOPWORDS", "phrases", "split_words", "stem", "terms"]

#: Runs of letters or digits; everything else (``/``, ``_``, ``{``, ``.``, ``-``) separates.
_RUN = re.compile(r"[^\W\d_]+|\d+")

#: Function words that carry no intent in a request ("can you get me the ..."). Kept
#: short on purpose: words like "all", "new", "by", "not" do separate operations.
#: "many" and "much" only size what follows ("how many moons does Jupiter have"): as
#: terms they tied questions to an operation that says "how many cats" (ToolAlpaca MRR
#: 0.878 -> 0.881, final@1 0.763 -> 0.768; Twilio's known-item check unchanged).
STOPWORDS = frozenset(
    """a an and are as at be been but can could do does for from have how i if in into is it
    its many me much my of on or our please should so than that the their them then there
    these they this those to was we were what when where which who whom why will with would
    you your""".split()
)

_STEMMER = snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def _words_of_run(run: str) -> tuple[str, ...]:
    """``IPAddress`` -> ``("ip", "address")``: a new word starts at a lower->upper step, and
    at the last capital of an acronym that a lower-case letter follows (any script).

    Cached: specs repeat the same identifiers and words thousands of times.
    """
    if run.islower() or run.isupper() or run.isdigit():
        return (run.lower(),)
    starts = [0] + [
        i
        for i in range(1, len(run))
        if run[i].isupper() and (run[i - 1].islower() or (i + 1 < len(run) and run[i + 1].islower()))
    ]
    return tuple(run[a:b].lower() for a, b in zip(starts, starts[1:] + [len(run)]))


def split_words(text: str) -> list[str]:
    """``getIPAddress_v2/{userId}`` -> ``["get", "ip", "address", "v", "2", "user", "id"]``.

    Lower-cased words in order; camelCase, acronyms, snake_case and paths all split.
    """
    return [word for run in _RUN.findall(text) for word in _words_of_run(run)]


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Porter2 stem of a lower-case word (``"holidays"`` -> ``"holiday"``)."""
    return str(_STEMMER.stemWord(word))


def terms(*texts: str) -> list[str]:
    """The search terms of ``texts``, in order: their words, without stopwords, stemmed."""
    return [term for text in texts for term in _terms_of(text)]


@lru_cache(maxsize=65536)
def _terms_of(text: str) -> tuple[str, ...]:
    """Cached per text: big specs repeat the same parameter and field descriptions
    hundreds of times (Twilio: "The SID of the Account that created the resource")."""
    return tuple(stem(w) for w in split_words(text) if w not in STOPWORDS)


def phrases(words: list[str]) -> list[str]:
    """Adjacent pairs of terms, ``["public", "holiday"]`` -> ``["public_holiday"]``.

    Indexed beside the single terms so that word order counts a little: "next public
    holidays" matches ``NextPublicHolidays`` better than ``PublicHolidaysNext`` would
    (the sequential-dependence idea of Metzler & Croft, 2005, reduced to bigrams).
    """
    return [f"{a}_{b}" for a, b in zip(words, words[1:])]
