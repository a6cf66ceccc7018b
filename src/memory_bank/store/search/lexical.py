"""Lexical candidates and their scores: one plan, the same on every backend.

A search reads the ``search_text`` of the rows it ranges over (its WHERE clause:
owner, version, filters), at most ``SAMPLE_ROWS + 1`` of them:

* when that is all of them and no more than ``SCAN_ROWS`` (the common case: one user's or one org's memories),
  statistics and candidates come from those rows in Python: their count, mean length,
  and per query term how many contain it, tested as the whole term ``" term "``
  (``store.text`` pads every value with spaces). One indexed range read, exact,
  nothing missed. Both full-text indexes are one index over every tenant, so asking
  them costs as much as the word's matches in the whole table: measured at 100k rows
  on MariaDB, 300 ms for a common word, against 3 ms to scan an org's 1,000 rows
  (``bench/memory_backends.py``). Reading the rows once, rather than one SQL pass for
  statistics and another for candidates, halved the time per search at 1,000 rows
  (``bench/memory_scale.py``);
* beyond ``SCAN_ROWS``, the rows read are a sample of the owner's: statistics come from them
  (df / n and the mean length are ratios, which a sample of 20,000 estimates closely;
  the sample is kept for a minute, ``sample_cache``, as reading it was half the search),
  and the dialect's full-text index finds the candidates, best bands first
  (``_from_index``): the rows holding every query term, then every term but the
  commonest (by the sample's counts), and so on down to two terms, and the rows
  holding any term only when these are fewer than ``bound``; at most ``CANDIDATES``
  (or ``bound``) per question, best first by the index's own relevance, and at most
  ``QUESTIONS`` questions (below). An exact
  count over every row was the slow part first: one aggregate ``LIKE '% term %'``
  pass in SQL took 290 ms of a 555 ms search (p50) for an owner of 100,000 memories
  on MariaDB; the sample replaced it. Then the index: asking it for rows with any
  term makes it rank every row holding a common word (87 ms p50 for that query
  alone), while the rows holding all terms, which the score rule ranks first
  anyway, take 13 ms and number at least 100 for two queries in three. With the
  bands first, the 100,000-memory owner's search went from 188 to 75 ms p50 on
  MariaDB (p95 452 -> 275) and 93 to 39 ms on SQLite; its top 10 shares 0.896 of
  the exact top 10 (every row scanned) on MariaDB against 0.894 before, 0.994
  against 0.999 on SQLite, whose own ranking of any-term rows was closer to ours.
  (Asking for only the rarer terms, with no band order, was as fast but kept 0.67.)
  When the bands fall short, the "any term" question first leaves out the terms in
  more than a tenth of the rows (``COMMON``): a row holding only those is the weakest
  of the one-term band, and asking for them makes the index rank most of the owner's
  rows (300-400 ms for a five-term query holding a name in 97 % of them). With that
  step, the same owner's p95 went from 386-413 to 157-179 ms on MariaDB (two runs of
  300 queries each; p99 ~500 -> ~340) and from 131-139 to 86-90 ms on SQLite, at
  top-10 agreement 0.919 -> 0.910 and 0.988 -> 0.985. (On 150 queries, leaving out
  terms in more than a fifth kept 0.918 at p95 207 ms, more than a fiftieth 0.898 at 194.)

What one search may cost the database, whatever the query (``text.query_terms`` first
cuts 2,000 characters, 100 distinct words or one word repeated down to at most
``MAX_TERMS`` distinct terms, stopwords gone), besides the reads by primary key of at
most ``max(3 * limit, 30)`` rows that rank the page (``search_ranking``):

* the scan: one read of at most ``SCAN_ROWS + 1`` rows of the searched range, nothing else;
* the index plan: the sample read (at most ``SAMPLE_ROWS + 1`` rows, none while the sample
  is cached), then at most ``QUESTIONS`` questions, each returning at most
  ``max(bound, CANDIDATES)`` rows (``bound`` is ten times the page, so 1,000 at most):
  ``QUESTIONS - 3`` bands at most (the rows holding the 5..2 rarest indexed terms, so a
  query of up to five terms keeps every band), the two "any term" questions, each of
  these naming at most ``MAX_TERMS`` terms the index holds, and, only when the query has
  terms the index cannot see (``SearchBackend.unindexed``: on MariaDB the one- and
  two-letter ones), one read of the newest rows past the sample (``_unseen``). Never a
  ``LIKE`` over the searched rows: those terms are tested here, on the sample and those
  rows (at most ``max(bound, CANDIDATES)`` of their holders join the candidates), and a
  row past both is found by the terms the index holds. A ``LIKE`` test is a pass over
  every searched row, slower than reading them and testing here
  (``docs/decisions/0001-short-terms-without-like.md``).

Every candidate is then scored from its ``search_text`` with BM25 over the searched
rows' statistics (``bm25``) and the score rule of ``store.search``: other tenants'
rows change neither the candidates of the scan nor any score. On a scan only the rows
of the best coordination bands are scored, whole bands until there are ``bound``
(``_top_bands``): no row of a lower band can outrank them, and a query of common words
matches half of an owner's rows (1,000 rows per org: 444 candidates on average, whose
BM25 was a quarter of a search's CPU).

Pseudo-relevance feedback (RM3-style expansion with the terms of the best 5 matches,
re-ranking inside a coordination band) was tried and dropped: leave-one-conversation-out
on LoCoMo it raised recall@10 from 0.666 to 0.691 at MRR 0.517 -> 0.512, but counting
the new terms over every searched row cost 3 ms of CPU per search, which took the 1M
MariaDB p50 from 14.5 to 17.3 ms, past the 15 ms budget (commit 9dc5db4 has it).
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from itertools import chain, compress, repeat
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy import ColumnElement
from sqlmodel import Session, col

from memory_bank.store.search.backend import SearchBackend, score
from memory_bank.store.search.sample_cache import Row, SampleCache
from memory_bank.store.tables import MemoryRow
from memory_bank.textsearch import bm25

#: Searches over at most this many rows read them all instead of asking the full-text index.
SCAN_ROWS = 20_000
#: Rows read, at most (plus one), whatever the plan: beyond ``SCAN_ROWS`` they are the sample
#: the statistics come from. Separate so that tests can force the index plan on a small
#: owner (``SCAN_ROWS = 0``) and still get its exact statistics.
SAMPLE_ROWS = 20_000
#: Candidates the index plan scores, at least; beyond it, the index's order picks which.
CANDIDATES = 500
#: Share of the sampled rows above which a term is common: the index plan's "any term"
#: question leaves such terms out first (see ``_from_index``).
COMMON = 0.1
#: Questions one search may ask beyond its read of the searched rows, whatever the query:
#: the bound of the index plan (see the module docstring), which ``_questions`` keeps.
QUESTIONS = 7

#: One question of the index plan: (its condition, an ascending best-first order), built when asked.
Question = Callable[[], tuple[ColumnElement[bool], ColumnElement[Any]]]

_text = cast(ColumnElement[str], col(MemoryRow.search_text))


def _corpus(rows: Sequence[Row], frequency: dict[str, int]) -> bm25.Corpus:
    return bm25.Corpus(len(rows), sum(len(text) for _, text in rows) / len(rows), frequency)


def _holding(rows: Sequence[Row], terms: Sequence[str]) -> list[tuple[list[str], Row]]:
    """The rows holding any of ``terms``, each with the terms it holds, by whole-term substring
    tests (cheaper than splitting every row: most rows of an owner hold none of the terms)."""
    padded = [(t, f" {t} ") for t in terms]
    found = []
    for row in rows:
        held = [t for t, p in padded if p in row[1]]
        if held:
            found.append((held, row))
    return found


def _scan(rows: Sequence[Row], terms: Sequence[str]) -> tuple[bm25.Corpus, list[tuple[int, Row]]]:
    """Statistics of all ``rows`` and the rows holding any term, each with how many it holds."""
    found = _holding(rows, terms)
    frequency = Counter(t for held, _ in found for t in held)
    return _corpus(rows, {t: frequency[t] for t in terms}), [(len(held), row) for held, row in found]


def _positions(rows: Sequence[Row], terms: Sequence[str]) -> dict[str, list[int]]:
    """Per term, the positions of the ``rows`` holding it, one tight pass per term: the sample's
    statistics are their counts (splitting or looping over the rows in Python was a third of
    the index plan's search time at 100,000 rows, and three times slower than this)."""
    texts, positions = [text for _, text in rows], range(len(rows))
    return {t: list(compress(positions, map(operator.contains, texts, repeat(f" {t} ")))) for t in terms}


def _holding_unseen(rows: Sequence[Row], found: dict[str, list[int]], unseen: Sequence[str]) -> list[tuple[int, Row]]:
    """The ``rows`` holding a term of ``unseen``, each with how many query terms it holds."""
    held = Counter(chain.from_iterable(found.values()))
    return [(held[i], rows[i]) for i in set(chain.from_iterable(found[t] for t in unseen))]


def _top_bands(found: Sequence[tuple[int, Row]], bound: int) -> list[Row]:
    """The rows of the best coordination bands (most query terms held), whole bands, until
    at least ``bound`` rows: the score rule ranks every row of a band above every row of
    a lower one, so only these can reach the top ``bound`` and only they need BM25."""
    by_band = sorted(found, key=lambda item: item[0], reverse=True)
    if len(by_band) <= bound:
        return [row for _, row in by_band]
    floor = by_band[bound - 1][0]
    return [row for held, row in by_band if held >= floor]


def _questions(
    session: Session, backend: SearchBackend, terms: Sequence[str], unseen: Sequence[str], corpus: bm25.Corpus
) -> list[Question]:
    """The index plan's questions to the full-text index in the order asked, at most
    ``QUESTIONS - 1`` whatever the query (see the module docstring): the bands, rows holding
    the rarest indexed terms (by the sample's counts), ``QUESTIONS - 3`` at most; then any
    indexed term but the common ones, then any indexed term at all."""
    indexed = [t for t in terms if t not in unseen]
    rarest_first = sorted(indexed, key=lambda t: corpus.frequency[t])
    largest = min(len(indexed), QUESTIONS - 2)  # sizes largest..2: QUESTIONS - 3 bands at most
    asks: list[Question] = [partial(backend.index_match, session, rarest_first[:size], every=True) for size in range(largest, 1, -1)]
    rarer = [t for t in indexed if corpus.frequency[t] <= COMMON * corpus.documents]
    if 0 < len(rarer) < len(indexed):
        asks.append(partial(backend.index_match, session, rarer))
    if indexed:
        asks.append(partial(backend.index_match, session, indexed))
    return asks


def _unseen(
    session: Session,
    where: Sequence[ColumnElement[bool]],
    terms: Sequence[str],
    unseen: Sequence[str],
    sample: Sequence[Row],
    found: dict[str, list[int]],
    bound: int,
) -> list[Row]:
    """Candidates for the terms the index cannot see, tested here, never by ``LIKE`` in SQL
    (slower than reading the rows, ``bench/short_terms_mariadb.py``): in the sample (``found``: where each term is in it)
    and in the newest rows past it (those saved since it was read among them), one read of
    at most ``max(bound, CANDIDATES)`` rows; of these, as many, most query terms held first,
    then newest (whole bands, as on a scan, would score every row for a term in all of them)."""
    newer = (
        sa.select(col(MemoryRow.pk), _text)
        .where(*where, col(MemoryRow.pk) > max(pk for pk, _ in sample))
        .order_by(col(MemoryRow.pk).desc())
        .limit(max(bound, CANDIDATES))
    )
    recent = [(pk, text or "") for pk, text in session.execute(newer)]
    holding = _holding_unseen(sample, found, unseen) + _holding_unseen(recent, _positions(recent, terms), unseen)
    best = sorted(holding, key=lambda item: (item[0], item[1][0]), reverse=True)[: max(bound, CANDIDATES)]
    return [row for _, row in best]


def _from_index(
    session: Session,
    backend: SearchBackend,
    where: Sequence[ColumnElement[bool]],
    terms: Sequence[str],
    unseen: Sequence[str],
    corpus: bm25.Corpus,
    bound: int,
) -> list[Row]:
    """Candidates from the index, the plan's ``_questions`` asked in turn until there are
    ``bound``, at most ``max(bound, CANDIDATES)`` rows per question, best first by its order."""
    found: dict[int, str] = {}
    for ask in _questions(session, backend, terms, unseen, corpus):
        match, best_first = ask()
        statement = (
            sa.select(col(MemoryRow.pk), _text)
            .where(*where, match)
            .order_by(best_first, col(MemoryRow.created_at).desc())
            .limit(max(bound, CANDIDATES))
        )
        found.update((pk, text or "") for pk, text in session.execute(statement))
        if len(found) >= bound:
            break
    return list(found.items())


def _sample_key(session: Session, statement: sa.ClauseElement) -> tuple[str, str]:
    """The sample read's SQL and parameters: the same rows are read by the same statement."""
    compiled = statement.compile(dialect=session.get_bind().dialect)
    return str(compiled), repr(sorted(compiled.params.items()))


def lexical(
    session: Session,
    backend: SearchBackend,
    where: Sequence[ColumnElement[bool]],
    terms: Sequence[str],
    bound: int,
    samples: SampleCache,
) -> dict[int, float]:
    """pk -> score of the candidates (``terms`` non-empty, distinct, from ``text.query_terms``):
    on a scan, the rows of the best bands, at least ``bound`` of them when that many match;
    on the index plan, what the index found. ``samples`` keeps the rows read of an owner
    too large to scan, for the next searches' statistics (``sample_cache``)."""
    statement = sa.select(col(MemoryRow.pk), _text).where(*where).limit(max(SCAN_ROWS, SAMPLE_ROWS) + 1)
    key = _sample_key(session, statement) if len(samples) else None  # keying costs 0.2 ms: only when it can hit
    rows = samples.get(key) if key else None
    if rows is None:
        rows = [(pk, text or "") for pk, text in session.execute(statement)]
        if len(rows) > SCAN_ROWS:
            samples.put(key or _sample_key(session, statement), rows)
    if not rows:
        return {}
    if len(rows) > SCAN_ROWS:  # too many to scan: the sample's statistics stand, the index finds the candidates
        where_in_sample = _positions(rows, terms)
        corpus = _corpus(rows, {t: len(at) for t, at in where_in_sample.items()})
        unseen = backend.unindexed(session, terms)
        candidates = _from_index(session, backend, where, terms, unseen, corpus, bound)
        if unseen:
            candidates += _unseen(session, where, terms, unseen, rows, where_in_sample, bound)
    else:
        corpus, found = _scan(rows, terms)
        candidates = _top_bands(found, bound)
    wanted = frozenset(terms)
    hits = {}
    for pk, text in candidates:
        matched, relevance = corpus.relevance(text.split(), len(text), wanted)
        if matched:  # the index may over-match (its own word split); the terms decide
            hits[pk] = score(matched, relevance, len(terms))
    return hits
