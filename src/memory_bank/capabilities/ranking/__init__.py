"""Capability search (the ``search_capabilities`` meta-tool and ``GET /v1/capabilities``),
split by job so each piece can be read and tested alone:

* ``search``            - ``CapabilitySearch`` / ``Match``: the public API; fuses the signals.
* ``fields``            - which text of a capability is searched, in which field, at what weight.
* ``example_requests``  - the spec's examples as a collection of requests.
* ``example_intents``   - a classifier trained on those examples.
* ``question_fallback`` - a question no operation names reaches a question-answering one.
* ``request_steps``     - a request of several steps gets its last step's operation first.
* ``safety``            - what the annotations say may not come first for a request.
* ``confidence``        - how sure the first result is: what an agent acts on.
* ``semantic``          - the optional embedding signal (``semantic`` extra).

Tokenizing, BM25F and fusion come from ``textsearch``.
"""
