"""What operators watch: Prometheus metrics, readiness probes, per-call observation."""
