"""Memory search: one pipeline on every database, ranked with owner-local statistics.

* ``pipeline``  - ``MemorySearch``: query -> ranked rows (lexical, semantic, boosts).
* ``backend``   - the score rule and the dialect interface (``SearchBackend``).
* ``lexical``   - candidates and BM25 scores from the searched rows or the full-text index.
* ``text``      - a memory's indexed ``search_text`` and a query's terms.
* ``semantic``  - the optional embedding half (``semantic`` extra).
* ``boosts``    - same-origin lift and feedback.
* ``indexing``  - what a row carries for search, derived when it is written.
* ``backends``  - the SQLite FTS5 and MySQL/MariaDB FULLTEXT dialects.
"""
