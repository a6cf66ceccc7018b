"""Capabilities: the registry of operations agents can discover and call.

Search (for the ``search_capabilities`` meta-tool and ``GET /v1/capabilities``) is
split by job so each piece can be read and tested alone:

* ``search``        - ``CapabilitySearch`` / ``Match``: the public API; fuses the signals.
* ``search_fields`` - which text of a capability is searched, in which field, at what weight.
* ``bm25f``         - the in-memory BM25F index and its [0, 1] score normalisation.
* ``text``          - one tokeniser for specs and requests: splitting, stopwords, stemming.
* ``semantic``      - the optional local-embedding signal (``semantic`` extra).
"""
