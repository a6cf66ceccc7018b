"""Helpers the tests share: databases and services, live servers, raw HTTP, requirements.

A package of its own so that pytest collects only the test modules, and a test
names where a helper comes from (``from support.mcp_live import live_server``).
"""
