"""The retrieval kit both searches (memories and capabilities) are built from.

* ``tokenize``   - text -> terms: identifier and folded splitting, named stopword lists, stemming.
* ``bm25``       - Okapi BM25 (``Corpus``) and BM25F on top of it, one K1, B and idf.
* ``fusion``     - lexical + embedding score fusion.
* ``embeddings`` - the optional local embedding model (``semantic`` extra).
* ``spelling``   - a request's misspelt words, corrected to an index's words.

It knows nothing of memories, operations, SQL or HTTP.
"""
