"""Lexical candidates and their scores for owners whose postings this replica does not hold.

Most searches rank from the owner's postings kept in the process (``postings``); this plan
serves the others: a partition larger than the whole postings budget, or a replica run with
a budget of 0. It is the same on every backend. A search reads the ``search_text`` of the rows it ranges over (its WHERE clause:
owner, version, filters), at most ``SAMPLE_ROWS + 1`` of them:

* when that is all of them and no more than ``SCAN_ROWS`` (the common case: one user's
  or one org's memories), statistics and candidates come from those rows in Python:
  their count, mean length, and per query term how many contain it, tested as the whole
  term ``" term "`` (``text`` pads every value with spaces). One indexed range read,
  exact, nothing missed. Both full-text indexes are one index over every tenant, so
  asking them costs as much as the word's matches in the whole table, far more than
  reading one owner's rows; and one read serves both statistics and candidates;
* beyond ``SCAN_ROWS``, the rows read are a sample of the owner's: statistics come from
  them (df / n and the mean length are ratios, which a sample of 20,000 estimates
  closely) and the dialect's full-text index finds the candidates, best bands first
  (``_from_index``): the rows holding every query term, then every term but the
  commonest (by the sample's counts), and so on down to two terms, and the rows
  holding any term only when these are fewer than ``bound``; at most ``CANDIDATES``
  (or ``bound``) per question, best first by the index's own relevance, and at most
  ``QUESTIONS`` questions (below). Asking for the bands first spares the index ranking
  every row that holds a common word, when the rows holding all terms (which the score
  rule ranks first anyway) usually suffice; when the bands fall short, the "any term"
  question first leaves out the terms in more than a tenth of the rows (``COMMON``): a
  row holding only those is the weakest of the one-term band, and asking for them makes
  the index rank most of the owner's rows.

The sample is the first ``SAMPLE_ROWS + 1`` rows the database returns for the range,
with no ORDER BY: in practice the oldest rows (both backends read the range in primary
key order). Its statistics then lag what the owner wrote since; they are ratios, which
that lag moves little, and candidates still come from the index over every row.

The sample of an owner too large to scan is kept per searched row set (the WHERE
clause: owner, versions, filters) for ``SAMPLE_TTL`` seconds, at most ``SAMPLES_KEPT`` of
them, least recently used out first (:func:`sample_cache`): reading it is the largest part
of such a search, and a minute's new memories cannot move the ratios of an owner of that
size. Candidates still come from the index on every search, so a memory saved a second
ago is found; only its weight in the statistics waits for the next sample.

What one search may cost the database, whatever the query (``text.query_terms`` first
cuts 2,000 characters, 100 distinct words or one word repeated down to at most
``MAX_TERMS`` distinct terms, stopwords gone), besides the reads by primary key of at
most ``max(3 * limit, 30)`` rows that rank the page (``pipeline``):

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
rows' statistics (``textsearch.bm25``) and the score rule of ``backend``: other tenants'
rows change neither the candidates of the scan nor any score. On a scan only the rows
of the best coordination bands are scored, whole bands until there are ``bound``
(``_top_bands``): no row of a lower band can outrank them, and a query of common words
matches half of an owner's rows.

The measurements behind this plan: ``docs/decisions/0005-memory-search-plan.md``.
"""

from __future__ import annotations

import operator
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from itertools import chain, compress, repeat
from typing import Any, cast

import sqlalchemy as sa
from cachetools import TTLCache
from sqlalchemy import ColumnElement
from sqlmodel import Session, col

from memory_bank.store.search.backend import SearchBackend, score
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

#: Seconds a sample is used for (see the module docstring).
SAMPLE_TTL = 60.0
#: Samples kept at most: one of 20,000 rows of bench text is about 6 MB.
SAMPLES_KEPT = 8

Row = tuple[int, str]  # pk, search_text
#: The sample read's SQL and its parameters: the same rows are read by the same statement.
SampleKey = tuple[str, str]
#: The kept samples of owners too large to scan, by their read (:func:`sample_cache`).
Samples = TTLCache[SampleKey, Sequence[Row]]

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
    statistics are their counts (splitting the rows, or looping over them in Python, is
    several times slower: ``docs/decisions/0005-memory-search-plan.md``)."""
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


def sample_cache(ttl: float = SAMPLE_TTL, size: int = SAMPLES_KEPT, timer: Callable[[], float] = time.monotonic) -> Samples:
    """An empty cache of samples: entries expire ``ttl`` seconds after they are put, and
    beyond ``size`` entries the least recently used goes first."""
    return TTLCache(maxsize=size, ttl=ttl, timer=timer)


#: cachetools caches are not thread-safe, and one ``MemorySearch`` serves every request thread.
_samples_lock = threading.Lock()


def _sample_key(session: Session, statement: sa.ClauseElement) -> SampleKey:
    """The sample read's SQL and parameters."""
    compiled = statement.compile(dialect=session.get_bind().dialect)
    return str(compiled), repr(sorted(compiled.params.items()))


def lexical(
    session: Session,
    backend: SearchBackend,
    where: Sequence[ColumnElement[bool]],
    terms: Sequence[str],
    bound: int,
    samples: Samples,
) -> dict[int, float]:
    """pk -> score of the candidates (``terms`` non-empty, distinct, from ``text.query_terms``):
    on a scan, the rows of the best bands, at least ``bound`` of them when that many match;
    on the index plan, what the index found. ``samples`` keeps the rows read of an owner
    too large to scan, for the next searches' statistics (:func:`sample_cache`)."""
    # No ORDER BY: beyond SCAN_ROWS this is the sample, in practice the oldest rows (see the module docstring).
    statement = sa.select(col(MemoryRow.pk), _text).where(*where).limit(max(SCAN_ROWS, SAMPLE_ROWS) + 1)
    key = _sample_key(session, statement) if len(samples) else None  # keying costs a compile: only when it can hit
    with _samples_lock:
        rows = samples.get(key) if key else None
    if rows is None:
        rows = [(pk, text or "") for pk, text in session.execute(statement)]
        if len(rows) > SCAN_ROWS:
            key = key or _sample_key(session, statement)
            with _samples_lock:
                samples[key] = rows
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
