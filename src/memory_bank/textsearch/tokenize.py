"""Text -> search terms: one tokenizer, two ways of splitting, two named stopword lists.

Both searches reduce what is indexed and what is asked to the same terms, or no ranker
can match them; each does it with one function used on both sides:

* :func:`identifier_terms` for API text, where names and paths glue words together
  (``getUserById``, ``/ip_addresses``, ``IPAddress``) and requests are prose ("holidays
  in France"): runs of letters or digits, camelCase and acronyms split,
  :data:`API_STOPWORDS` dropped, stemmed;
* :func:`folded_terms` for memories, whose text is prose in any script: case,
  compatibility forms and accents folded (:func:`fold`), split at every non-alphanumeric
  character (``v2`` stays one word), :data:`MEMORY_STOPWORDS` dropped, stemmed; scripts
  written without spaces as characters and pairs, an emoji as a term, both spelt in ASCII.

The two lists differ because the two searches were tuned on different data: each is
part of its search's ranking, and changing one changes that search's figures.

Stemming is Snowball's English (Porter2) stemmer from ``snowballstemmer`` (with
``PyStemmer`` installed it runs in C, same stems): the standard light stemmer of IR; it
folds "holidays" / "holiday", "countries" / "country", "nutritional" / "nutrition".
Stems are cached: vocabularies are small, so after indexing nearly every word is a hit.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from itertools import pairwise

import snowballstemmer

__all__ = [
    "API_STOPWORDS", "MEMORY_STOPWORDS", "OPAQUE_VALUE", "PARTICIPLE", "fold", "folded_terms", "identifier_terms", "masked_opaque", "phrases", "split_words", "stem",
]  # fmt: skip

#: Function words that carry no intent in a request for an operation ("can you get me the
#: ..."). Kept short on purpose: words like "all", "new", "by", "not" do separate
#: operations; "many" and "much" only size what follows ("how many moons does Jupiter have").
API_STOPWORDS = frozenset(
    """a an and are as at be been but can could do does for from have how i if in into is it
    its many me much my of on or our please should so than that the their them then there
    these they this those to was we were what when where which who whom why will with would
    you your""".split()
)

#: Function words that match nearly every memory and so only add noise; dropped from
#: indexed text and queries alike. A query made only of these finds nothing lexically.
MEMORY_STOPWORDS = frozenset(
    """a about all also am an and any are as at be been but by can could did do does
    for from had has have he her his how i if in into is it its me my no not of on or
    our she should so some than that the their them then there these they this those
    to us was we were what when where which who whom why will with would you your""".split()
)

#: Runs of letters or digits; everything else (``/``, ``_``, ``{``, ``.``, ``-``) separates.
_RUN = re.compile(r"[^\W\d_]+|\d+")
#: Runs of letters and digits together: every separator (space, punctuation, ``_``) splits.
_WORD = re.compile(r"[^\W_]+")

#: Scripts written without spaces between words (Han, kana, Hangul, Thai, Lao, Myanmar,
#: Khmer), their marks included: their runs are searched by pieces (:func:`_unspaced_terms`).
_UNSPACED_CHARS = (
    "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f"
)
_UNSPACED = re.compile(f"[{_UNSPACED_CHARS}]")
#: Variation selectors choose a glyph (葛 or its variant, ❤ as emoji) and mean nothing more;
#: left in, one split an unspaced run.
_VARIATION_SELECTOR = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef]")
#: A flag: two regional indicator symbols (🇯🇵 is J and P), one term, or every flag with a P
#: in its code (🇵🇱, 🇯🇲) matched it.
_FLAG = "[\U0001f1e6-\U0001f1ff]{2}"
#: A run of an unspaced script, a word run (as :data:`_WORD`) of other scripts (so "2024年"
#: and "iPhoneを" split where the script changes), or one character of anything else but
#: space: a flag or a symbol (category ``So``: an emoji, a dingbat) becomes a term, punctuation
#: is dropped.
_TERM_SOURCE = re.compile(f"([{_UNSPACED_CHARS}]+)|[^\\W_{_UNSPACED_CHARS}]+|({_FLAG})|[^\\w\\s]")
#: What the term of a piece of an unspaced script, and of a symbol or a flag, starts with
#: before its code points in hex (``"披萨"`` -> ``u062ab08428``, 🍕 -> ``sym1f355``, 🇯🇵 ->
#: ``sym1f1ef1f1f5``): ASCII letters and digits only, and at least three of them, so FTS5 and
#: InnoDB FULLTEXT (whose shortest word is three characters, and whose word splits differ for
#: such scripts' marks) both keep it as one indexed word.
UNSPACED_PREFIX = "u"
SYMBOL_PREFIX = "sym"
#: A word of the text spelt like such a term (``u04ee307801``, ``sym1f355``), or like such a
#: word escaped (``xu04ee307801``), is escaped with one more ``x`` (:func:`_word_term`): else
#: a memory holding the word matched the Chinese or the emoji it spells.
_SPELT_LIKE = re.compile(f"x*(?:{UNSPACED_PREFIX}|{SYMBOL_PREFIX})(?:[0-9a-f]{{5}})+")

#: What may be one value in API text or a request: letters, digits and the separators ids
#: are made with (``mem_01J9ZK3Q``, a UUID, ``CA107308006SI``).
_CHUNK = re.compile(r"[\w\-%+=]+")
_DIGIT = re.compile(r"\d")
#: The term every opaque value becomes (:func:`_opaque`): no word tokenizes to it.
OPAQUE_VALUE = "#id"
#: What ``identifier_terms(..., participles=True)`` appends to the stem of a word in "-ed".
PARTICIPLE = "~ed"

_STEMMER = snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def _words_of_run(run: str) -> tuple[str, ...]:
    """``IPAddress`` -> ``("ip", "address")``: a new word starts at a lower->upper step, and
    at the last capital of an acronym that a lower-case letter follows (any script), except
    the plural ``s`` of an acronym (``GUIDs``, ``listAPIsForUser``), which ends the acronym.

    Cached: specs repeat the same identifiers and words thousands of times.
    """
    if run.islower() or run.isupper() or run.isdigit():
        return (run.lower(),)
    starts = [0] + [
        i
        for i in range(1, len(run))
        if run[i].isupper() and (run[i - 1].islower() or (i + 1 < len(run) and run[i + 1].islower() and not _plural_s(run, i + 1)))
    ]
    return tuple(run[a:b].lower() for a, b in zip(starts, starts[1:] + [len(run)]))


def _plural_s(run: str, i: int) -> bool:
    """Whether ``run[i]`` is a lone ``s`` ending the run or followed by a capital: an acronym's plural."""
    return run[i] == "s" and (i + 1 == len(run) or run[i + 1].isupper())


def split_words(text: str) -> list[str]:
    """``getIPAddress_v2/{userId}`` -> ``["get", "ip", "address", "v", "2", "user", "id"]``.

    Lower-cased words in order; camelCase, acronyms, snake_case and paths all split.
    """
    return [word for run in _RUN.findall(text) for word in _words_of_run(run)]


def _opaque(chunk: str) -> bool:
    """Whether ``chunk`` is an opaque value (an id, a tracking number, a token), not words:
    at least 8 characters, letters and digits mixed, switching between the two at least
    three times or holding 4 digits beside 2 letters (``mem_01J9ZK3Q``, a UUID,
    ``CA107308006SI``, ``tt1234567``; not ``v2``, ``python3.8``, ``x86_64`` or a date)."""
    if len(chunk) < 8:
        return False
    kinds = [c.isdigit() for c in chunk if c.isalnum()]
    digits = sum(kinds)
    letters = len(kinds) - digits
    switches = sum(a != b for a, b in zip(kinds, kinds[1:]))
    return digits > 0 and letters > 0 and (switches >= 3 or (digits >= 4 and letters >= 2))


def masked_opaque(text: str, mask: str) -> str:
    """``text`` with each opaque value (:func:`_opaque`) replaced by ``mask``."""
    if not _DIGIT.search(text):
        return text
    return _CHUNK.sub(lambda match: mask if _opaque(match[0]) else match[0], text)


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Porter2 stem of a lower-case word (``"holidays"`` -> ``"holiday"``)."""
    return str(_STEMMER.stemWord(word))


def identifier_terms(*texts: str, participles: bool = False) -> list[str]:
    """The search terms of API ``texts``, in order: their words split as identifiers
    (:func:`split_words`), without :data:`API_STOPWORDS`, stemmed; with ``participles``, a
    word in "-ed" keeps a mark (:data:`PARTICIPLE`) after its stem, so the state "saved"
    stays apart from the order "save"."""
    return [term for text in texts for term in _identifier_terms_of(text, participles)]


@lru_cache(maxsize=65536)
def _identifier_terms_of(text: str, participles: bool = False) -> tuple[str, ...]:
    """Cached per text: big specs repeat the same parameter and field descriptions
    hundreds of times.

    An opaque value is one term, :data:`OPAQUE_VALUE`. Split into words, it gave a request
    a dozen one- and two-letter "words" (``mem_01JA2B3C`` -> ``mem`` ``01`` ``ja`` ``2`` ``b``
    ...) that matched fragments of unrelated text; as one term it meets the values an
    operation's own text shows."""
    if not _DIGIT.search(text):  # an opaque value holds digits: most text has none to look for
        return tuple(_word_terms(text, participles))
    terms: list[str] = []
    start = 0
    for match in _CHUNK.finditer(text):
        if _opaque(match[0]):
            terms += [*_word_terms(text[start : match.start()], participles), OPAQUE_VALUE]
            start = match.end()
    return (*terms, *_word_terms(text[start:], participles))


def _word_terms(text: str, participles: bool) -> list[str]:
    return [
        stem(w) + PARTICIPLE if participles and len(w) > 4 and w.endswith("ed") else stem(w)
        for w in split_words(text)
        if w not in API_STOPWORDS
    ]


def fold(text: str) -> str:
    """Lower-cased, compatibility-normalised, accents dropped (``Café`` -> ``cafe``); what
    is left is composed again, so a Hangul syllable stays one character. Marks of a script
    written without spaces are not accents and stay: Japanese voicing (パン is not ハン) and
    Thai vowels and tones. Variation selectors go.

    ASCII text is only lower-cased: it has nothing to decompose or drop, and the general
    path, a Python test per character, was most of the time of indexing an English memory."""
    if text.isascii():
        return text.lower()
    kept: list[str] = []
    on_unspaced = False
    for char in unicodedata.normalize("NFKD", text).casefold():
        if _VARIATION_SELECTOR.match(char):
            continue
        if not unicodedata.combining(char):
            on_unspaced = _UNSPACED.match(char) is not None
            kept.append(char)
        elif on_unspaced:
            kept.append(char)
    return unicodedata.normalize("NFC", "".join(kept))


def folded_terms(text: str, *, query: bool = False) -> list[str]:
    """The search terms of memory ``text`` in order: folded words, :data:`MEMORY_STOPWORDS`
    dropped, stemmed; a run of a script written without spaces as pieces
    (:func:`_unspaced_terms`), a symbol such as an emoji as a term of its own.

    A ``query`` reads such a run by its pairs only (a lone character by itself): every pair
    of a word is one of the terms of a memory holding it, pairs say more than single
    characters ("的" is in nearly every Chinese memory), and a query's terms are capped."""
    if text.isascii():
        return [_word_term(word) for word in _WORD.findall(text.lower()) if word not in MEMORY_STOPWORDS]
    terms: list[str] = []
    for match in _TERM_SOURCE.finditer(fold(text)):
        run = match[0]
        if match[1]:
            terms += _unspaced_terms(run, pairs_only=query)
        elif run[0].isalnum():
            terms += [_word_term(run)] if run not in MEMORY_STOPWORDS else []
        elif match[2] or unicodedata.category(run) == "So":
            terms.append(_code_points(SYMBOL_PREFIX, run))
    return terms


@lru_cache(maxsize=65536)
def _word_term(word: str) -> str:
    """The term of a folded word of a memory: its stem, escaped with an ``x`` when spelt like a
    piece or a symbol term (:data:`_SPELT_LIKE`). Cached like :func:`stem`: the check would
    otherwise nearly triple the time of tokenizing English text."""
    term = stem(word)
    return "x" + term if _SPELT_LIKE.fullmatch(term) else term


def _unspaced_terms(run: str, *, pairs_only: bool) -> list[str]:
    """``"披萨店"`` -> the terms of ``披``, ``披萨``, ``萨``, ``萨店``, ``店``: each character and
    each adjacent pair, in order (with ``pairs_only``, the pairs, or the one character of a
    run of one). Chinese, Japanese and Thai put no space between words (and Korean glues
    particles to them), so a word is found inside a memory's run by its pairs, and a
    one-character word by itself: the CJK bigram analysis of Lucene and Elasticsearch, with
    unigrams indexed. A character is a base with its marks (Thai "กิ" is one); a mark with
    no base before it is dropped, so a query cut after a base ("ิน" of "กิน") finds the rest."""
    pieces: list[str] = []
    for char in run:
        if unicodedata.category(char)[0] == "M":
            if pieces:
                pieces[-1] += char
        else:
            pieces.append(char)
    pairs = [a + b for a, b in pairwise(pieces)]
    if pairs_only:
        chosen = pairs or pieces
    else:
        chosen = [term for piece, pair in zip(pieces, [*pairs, ""]) for term in (piece, pair) if term]
    return [_code_points(UNSPACED_PREFIX, piece) for piece in chosen]


def _code_points(prefix: str, text: str) -> str:
    """``prefix`` and each code point of ``text`` as five hex digits (fixed width: no two texts share a term)."""
    return prefix + "".join(f"{ord(char):05x}" for char in text)


def phrases(words: list[str]) -> list[str]:
    """Adjacent pairs of terms, ``["public", "holiday"]`` -> ``["public_holiday"]``.

    Indexed beside the single terms so that word order counts a little: "next public
    holidays" matches ``NextPublicHolidays`` better than ``PublicHolidaysNext`` would
    (the sequential-dependence idea of Metzler & Croft, 2005, reduced to bigrams).
    """
    return [f"{a}_{b}" for a, b in zip(words, words[1:]) if OPAQUE_VALUE not in (a, b)]
