"""The generator: handwritten OpenAPI spec in, committed code under ``src/memory_bank/generated`` out.

``loader`` reads a spec and walks its operations (the one walk routes, interface and
catalog share), ``refs`` follows its ``$ref``s (the one resolver), ``validation`` and
``lint`` check it against OpenAPI and the house rules, ``schemas`` turns OpenAPI schemas
into JSON Schema, ``catalog_builder`` derives one capability per operation from any spec,
``render_*`` write the package, and ``cli`` ties it together with ``--check``. Every
refusal is an ``errors.SpecIssue``: the operation, the rule, why.
"""
