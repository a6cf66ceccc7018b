"""Memories in scripts written without spaces, and emoji, are found by what a person types.

Chinese, Japanese and Thai put no space between words, so a word is found inside a
memory's run by its characters and their pairs; an emoji is a term of its own
(``textsearch.tokenize.folded_terms``). Both backends, and the index plan an owner too
large to scan takes, as well as the scan."""

from __future__ import annotations

import re
import unicodedata

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import Engine
from support.revisions import rerun

from memory_bank.store import MemoryFilter, MemoryStore
from memory_bank.store.database import create_schema
from memory_bank.store.search import lexical
from memory_bank.store.search.text import query_terms, search_text
from memory_bank.store.tables import MemoryRow

EVERYTHING = MemoryFilter()

MEMORIES = {
    "pizza": "我喜欢吃披萨，尤其是周五晚上",
    "tokyo": "東京タワーに行った",
    "seoul": "서울에 갔다",
    "bangkok": "ไปกรุงเทพเมื่อวาน",
    "emoji": "Team lunch 🍕 then 👍🏽 from Ann",
    "english": "pizza on friday evenings",
    "bread": "パンを買った",  # bread; ハン and バン are other words
    "eat": "ฉันกินข้าว",  # I eat rice
    "bird": "นกบิน",  # a bird flies: กิน (eat) without its vowel is not in it
    "year": "2024年我去了北京看长城",
    "brand": "我用Python写代码",
}

FOUND_BY = [
    ("披萨", "pizza"),  # a word inside a run
    ("周五", "pizza"),
    ("吃", "pizza"),  # a one-character word
    ("東京", "tokyo"),
    ("タワー", "tokyo"),
    ("서울", "seoul"),  # a name with a particle glued to it
    ("กรุงเทพ", "bangkok"),
    ("🍕", "emoji"),
    ("👍", "emoji"),  # the skin tone is a modifier, not part of the symbol
    ("pizza", "english"),  # the emoji is not read as its name
    ("パン", "bread"),  # voicing marks are not accents
    ("กิน", "eat"),  # nor are Thai vowels
    ("北京", "year"),  # a year glued to Chinese text does not swallow it
    ("代码", "brand"),
    ("python", "brand"),
]


@pytest.fixture(params=["scan", "index plan"])
def scripts_store(request: pytest.FixtureRequest, engine: Engine, make_principal, monkeypatch: pytest.MonkeyPatch):
    """The memories above among 60 others; with the index plan (an owner too large to scan),
    statistics come from a sample of 10 rows that holds none of them, and more than the
    newest rows read beside it are saved after them: only the full-text index finds them."""
    store = MemoryStore(engine, lexical_cache_bytes=0) if request.param == "index plan" else MemoryStore(engine)
    if request.param == "index plan":
        monkeypatch.setattr(lexical, "SCAN_ROWS", 0)
        monkeypatch.setattr(lexical, "SAMPLE_ROWS", 10)
        monkeypatch.setattr(lexical, "CANDIDATES", 10)  # the newest rows read beside the sample, for a page of 1
    ann = make_principal()
    for n in range(20):
        store.create(ann, {"content": f"会议记录 第{n}号 meeting notes"})
    ids = {name: store.create(ann, {"content": content})[0].id for name, content in MEMORIES.items()}
    for n in range(40):
        store.create(ann, {"content": f"会议记录 第{n + 100}号 meeting notes"})
    return store, ann, ids


@pytest.mark.parametrize(("query", "name"), FOUND_BY)
def test_a_word_of_an_unspaced_script_or_an_emoji_finds_its_memory(scripts_store, query: str, name: str) -> None:
    store, ann, ids = scripts_store
    assert [row.id for row, _ in store.search(ann, EVERYTHING, query, 1)] == [ids[name]], query


def test_a_long_query_keeps_its_last_words(store: MemoryStore, make_principal) -> None:
    """A query's terms are capped; read as pairs only, a Chinese query of 40 characters keeps them all."""
    ann = make_principal()
    target, _ = store.create(ann, {"content": "全聚德是我们最喜欢的烤鸭店"})
    for content in ("今天下午开会讨论项目进度", "明天要去机场接朋友", "周末打算去爬山"):
        store.create(ann, {"content": content})
    query = "请你帮我回忆一下上个月我们一起去吃的那家非常有名的烤鸭店叫什么"
    assert [row.id for row, _ in store.search(ann, EVERYTHING, query, 5)][:1] == [target.id]


UNSPACED = st.sampled_from("我喜欢吃披萨尤其是周五晚上東京タワーに行ったひらがなカタカナ서울에갔다ไปกรงเทพ")


#: What is written glued to such text: a year, a brand, a glyph's variation selector.
GLUED = st.sampled_from(["2024", "Python", "iPhone", "100", "\ufe00", "\U000e0100", "x"])


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    prefix=st.lists(st.text(UNSPACED, max_size=4) | GLUED, max_size=3).map("".join),
    word=st.text(UNSPACED, min_size=1, max_size=4),
    suffix=st.lists(st.text(UNSPACED, max_size=4) | GLUED, max_size=3).map("".join),
)
def test_every_run_inside_an_unspaced_text_matches_it(prefix: str, word: str, suffix: str) -> None:
    """Every term of a query that is a run of the memory's text is one of the memory's terms,
    whatever Latin letters or digits are glued to the text ("2024年", "我用Python写代码")."""
    indexed = search_text(prefix + word + suffix)
    assert all(f" {term} " in indexed for term in query_terms(word))


#: Symbols that are themselves in compatibility form (emoji, dingbats; not "Ⓐ", which is "a").
SYMBOLS = st.characters(categories=["So"]).filter(lambda c: unicodedata.normalize("NFKD", c) == c)


@given(st.text(SYMBOLS, min_size=1, max_size=5))
def test_every_symbol_is_a_term_that_both_sides_share(symbols: str) -> None:
    indexed = search_text(f"note {symbols} end")
    terms = query_terms(symbols)
    assert terms and all(f" {term} " in indexed for term in terms)


def test_rows_indexed_before_are_indexed_anew_and_plain_ascii_rows_are_left_alone(
    engine: Engine, store: MemoryStore, make_principal
) -> None:
    """Revision 0009 clears the search text of every row whose text is not plain ASCII, and the
    start-up backfill writes the new terms; an ASCII row's search text is not touched."""
    ann = make_principal()
    ids = {name: store.create(ann, {"content": content})[0].id for name, content in MEMORIES.items()}
    tagged, _ = store.create(ann, {"content": "lunch", "tags": ["晚餐"]})
    with engine.begin() as connection:  # the terms the code before wrote: a run was one term, an emoji none
        connection.execute(sa.update(MemoryRow).values(search_text=" old ").where(MemoryRow.content != MEMORIES["english"]))
        connection.execute(sa.update(MemoryRow).values(search_text=" untouched ").where(MemoryRow.content == MEMORIES["english"]))
    assert store.search(ann, EVERYTHING, "披萨", 5) == []
    rerun(engine, "0009", before="0008")
    create_schema(engine)  # the start-up backfill
    for query, name in [(query, name) for query, name in FOUND_BY if name != "english"]:
        assert [row.id for row, _ in store.search(ann, EVERYTHING, query, 5)][:1] == [ids[name]], query
    assert [row.id for row, _ in store.search(ann, EVERYTHING, "晚餐", 5)][:1] == [tagged.id]
    with engine.connect() as connection:
        kept = connection.execute(sa.select(MemoryRow.search_text).where(MemoryRow.content == MEMORIES["english"])).scalar_one()
    assert kept == " untouched "


def test_a_query_that_starts_with_a_mark_finds_the_characters_after_it(store: MemoryStore, make_principal) -> None:
    """A mark with no base before it ("ิ" of "กิน", cut off its consonant) is dropped, so the
    rest is searched; kept, it made a pair no memory holds, and nothing was found."""
    ann = make_principal()
    eat, _ = store.create(ann, {"content": MEMORIES["eat"]})
    assert eat.id in [row.id for row, _ in store.search(ann, EVERYTHING, "ิน", 5)]
    assert query_terms("ิ") == []


def test_a_word_spelt_like_a_character_term_does_not_find_the_character(store: MemoryStore, make_principal) -> None:
    """Pieces and emoji are indexed as ASCII terms; a memory writing such a term as a word is
    found by that word, and neither finds the other."""
    ann = make_principal()
    (spelt,) = query_terms("北京")
    beijing, _ = store.create(ann, {"content": "北京"})
    word, _ = store.create(ann, {"content": f"locker code {spelt}"})
    pizza_word, _ = store.create(ann, {"content": "SYM1F355 and x" + spelt})
    assert [row.id for row, _ in store.search(ann, EVERYTHING, "北京", 5)] == [beijing.id]
    assert [row.id for row, _ in store.search(ann, EVERYTHING, spelt, 5)] == [word.id]
    assert [row.id for row, _ in store.search(ann, EVERYTHING, "x" + spelt, 5)] == [pizza_word.id]
    assert store.search(ann, EVERYTHING, "🍕", 5) == []


def spelt_as_terms(char: str) -> bool:
    terms = search_text(char).split()
    return bool(terms) and all(re.fullmatch("(u|sym)[0-9a-f]+", term) for term in terms)


#: Characters the tokenizer spells as terms: of unspaced scripts, and symbols.
SPELT = st.characters(categories=["Lo", "Mn", "So"]).filter(spelt_as_terms)


@given(words=st.lists(st.from_regex(r"[A-Za-z0-9]{1,20}", fullmatch=True), min_size=1, max_size=5), spelt=st.text(SPELT, min_size=1, max_size=6))
def test_no_ascii_word_shares_a_term_with_spelt_text(words: list[str], spelt: str) -> None:
    """Whatever ASCII words a memory holds, their terms and those of spelt characters never meet;
    the words' own spelling as terms included."""
    ascii_terms = set(query_terms(" ".join(words))) | set(search_text(" ".join(words)).split())
    own_spelling = " ".join(query_terms(spelt) + search_text(spelt).split())
    ascii_terms |= set(query_terms(own_spelling))
    assert not ascii_terms & (set(query_terms(spelt)) | set(search_text(spelt).split()))


def test_rows_holding_a_word_spelt_like_a_term_are_indexed_anew(engine: Engine, store: MemoryStore, make_principal) -> None:
    """Revision 0010 clears the search text of rows holding such a word, in any case or width, or
    a flag, and the backfill writes the new terms; other rows are not touched."""
    ann = make_principal()
    (spelt,) = query_terms("北京")
    word, _ = store.create(ann, {"content": "code " + spelt.upper()})
    tagged, _ = store.create(ann, {"content": "lunch", "tags": ["ｕ" + spelt[1:]]})  # fullwidth u
    beijing, _ = store.create(ann, {"content": "北京"})
    flag, _ = store.create(ann, {"content": "trip 🇯🇵"})
    plain, _ = store.create(ann, {"content": "pizza"})
    with engine.begin() as connection:  # the terms the code before wrote: the word unescaped, the flag's letters
        for row in (word, tagged, beijing):
            connection.execute(sa.update(MemoryRow).values(search_text=f" {spelt} ").where(MemoryRow.id == row.id))
        connection.execute(sa.update(MemoryRow).values(search_text=" trip sym1f1ef sym1f1f5 ").where(MemoryRow.id == flag.id))
        connection.execute(sa.update(MemoryRow).values(search_text=" untouched ").where(MemoryRow.id == plain.id))
    rerun(engine, "0010", before="0009")
    create_schema(engine)  # the start-up backfill
    assert [row.id for row, _ in store.search(ann, EVERYTHING, "北京", 5)] == [beijing.id]
    assert {row.id for row, _ in store.search(ann, EVERYTHING, spelt, 5)} == {word.id, tagged.id}
    assert [row.id for row, _ in store.search(ann, EVERYTHING, "🇯🇵", 5)] == [flag.id]
    with engine.connect() as connection:
        kept = connection.execute(sa.select(MemoryRow.search_text).where(MemoryRow.id == plain.id)).scalar_one()
    assert kept == " untouched "


def test_a_flag_finds_that_flag_only(store: MemoryStore, make_principal) -> None:
    """A flag is two regional indicator symbols; as one term each, 🇯🇵 (J, P) found 🇵🇱 and 🇯🇲."""
    ann = make_principal()
    japan, _ = store.create(ann, {"content": "trip 🇯🇵 in spring"})
    store.create(ann, {"content": "trip 🇵🇱 in summer"})
    store.create(ann, {"content": "trip 🇯🇲 in winter"})
    assert [row.id for row, _ in store.search(ann, EVERYTHING, "🇯🇵", 5)] == [japan.id]
