"""The generator: handwritten OpenAPI spec in, committed Python under ``src/memory_bank/generated`` out.

``loader`` and ``lint`` read and check a spec, ``schemas`` turns OpenAPI schemas into
JSON Schema, ``catalog_builder`` derives one capability per operation from any spec,
``render_*`` write the Python modules, and ``cli`` ties it together with ``--check``.
"""
