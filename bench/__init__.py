"""Benchmarks that print ratios measured in one run (``python cli.py bench ...``). Run from a checkout:
they compare against the pure-Python reference in ``tests/``."""
