"""Turn API text (identifiers, paths, prose) into search terms.

Operation names and paths glue words together (``getUserById``, ``/ip_addresses``,
``IPAddress``); queries are prose. Both sides must reduce to the same terms or the
best lexical ranker in the world matches nothing, so there is exactly one function
for both: :func:`terms`.
"""

from __future__ import annotations

import re

__all__ = ["STOPWORDS", "split_words", "terms"]

#: Runs of letters or digits; everything else (``/``, ``_``, ``{``, ``.``, ``-``) separates.
_RUN = re.compile(r"[A-Za-z]+|[0-9]+")
#: Inside one letter run: an acronym before a capitalised word, a capitalised word, a tail.
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+")

#: Function words that carry no intent in a request ("can you get me the ..."). Kept
#: short on purpose: words like "all", "new", "by", "not" do separate operations.
STOPWORDS = frozenset(
    """a an and are as at be been but can could do does for from have how i if in into is it
    its me my of on or our please should so than that the their them then there these they
    this those to was we were what when where which who whom why will with would you your""".split()
)


def split_words(text: str) -> list[str]:
    """``getIPAddress_v2/{userId}`` -> ``["get", "ip", "address", "v", "2", "user", "id"]``.

    Lower-cased words in order; camelCase, acronyms, snake_case and paths all split.
    """
    words: list[str] = []
    for run in _RUN.findall(text):
        words.extend(w.lower() for w in (_CAMEL.findall(run) if run[0].isalpha() else [run]))
    return words


def terms(text: str) -> list[str]:
    """The search terms of ``text``: its words without stopwords."""
    return [w for w in split_words(text) if w not in STOPWORDS]
