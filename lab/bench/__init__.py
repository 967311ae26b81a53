"""One-off measuring instruments of the experiments (``python -m lab.bench.NAME``; ``lab/README.md``).
The benchmarks the command line runs (``python cli.py bench rules|search``) stay in ``bench/``."""
