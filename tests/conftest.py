"""Test tiers (markers registered in pyproject.toml; docs/testing.md).

Every collected test carries exactly one tier:

- ``unit``: in-process tests of one module or kernel against a reference or hand-computed values;
- ``integration``: whole commands and jobs: the CLI in a subprocess, matches, the training pipeline,
  the browser server, the engine protocol, Ray;
- ``slow``: long runs kept out of the default run (``python -m pytest -m slow``);
- ``lab``: tests of the experiments in ``lab/`` (``python -m pytest -m lab lab/tests``).

The README's test command runs ``unit`` and ``integration`` (pyproject's ``addopts`` deselect ``slow``
and ``lab``). A test marked with a tier keeps it; otherwise its file decides: the files in
:data:`INTEGRATION_FILES` are ``integration``, every other file ``unit``.
"""

from __future__ import annotations

import pytest

TIERS = ("unit", "integration", "slow", "lab")

# Test files whose tests run whole commands or jobs (subprocesses, worker pools, servers).
INTEGRATION_FILES = frozenset({
    "test_analysis.py",
    "test_arena.py",
    "test_browser.py",
    "test_cli.py",
    "test_cli_errors.py",
    "test_diagnose.py",
    "test_engine_protocol.py",
    "test_experiment.py",
    "test_frontends.py",
    "test_fuzz.py",
    "test_ray.py",
    "test_signals.py",
    "test_train.py",
})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        tiers = [m.name for m in item.iter_markers() if m.name in TIERS]
        if len(set(tiers)) > 1:
            raise pytest.UsageError(f"{item.nodeid}: more than one test tier ({', '.join(sorted(set(tiers)))})")
        if not tiers:
            item.add_marker("integration" if item.path.name in INTEGRATION_FILES else "unit")


@pytest.fixture(scope="module")
def one_torch_thread():
    """One torch intra-op thread for a module's tests (``pytestmark = pytest.mark.usefixtures(...)``): on a
    loaded 2-core machine two spinning OpenMP threads are many times slower."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
