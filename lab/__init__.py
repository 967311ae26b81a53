"""Experiments: agents, plugins and measuring instruments that no default, no shipped model and no
built-in experiment uses, kept runnable beside the packages but not installed with them.

Nothing here is registered until it is imported: ``python cli.py arena --import lab.rollout
"rollout" expert`` (``catalog.import_plugins``, as for a user's plugin module), ``python cli.py
agents --import lab.slm_rollout``. The instruments run from a checkout's root as ``python -m
lab.bench.NAME``. Their tests are ``lab/tests`` (``python -m pytest -q -m lab lab/tests``), outside the
default run. ``lab/README.md`` indexes every module with what it measured; ``lab/MOVED.md`` lists
what left the installed packages.
"""
