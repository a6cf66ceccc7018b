"""What operators watch: Prometheus metrics, readiness probes, per-call observation.

It sits above ``store`` and ``security``: it reads their types and assembles their
parts (``wiring``), and they import nothing of it.
"""
