"""Capabilities: the registry of operations agents can discover and call.

``search`` ranks capabilities for the ``search_capabilities`` meta-tool (and the
``GET /v1/capabilities`` route); its helpers (``text``) stay here so that the same
tokenisation serves every caller.
"""
