"""Capabilities: the registry of operations agents can discover and call.

``registry`` and ``cards`` describe the operations, ``execute`` calls them, and
``ranking/`` finds the right one for a request.
"""
