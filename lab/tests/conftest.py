"""The tests of ``lab/`` (the experiments), their own tier: ``python -m pytest -q -m lab lab/tests``.

They live outside ``tests/`` (pyproject's ``testpaths``), so the default run never imports the lab
modules and the shipped tests, parametrised over the registered names, never see the lab's agents and
plugins. Importing ``lab.slm_rollout`` here registers ``slm_rollout`` and, through ``lab.rollout``,
``rollout`` and ``eval.rollout``; every test here carries the ``lab`` marker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import catalog  # noqa: F401 - every built-in agent and plugin
import lab.slm_rollout  # noqa: F401 - registers slm_rollout, and through lab.rollout rollout and eval.rollout

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    """Mark every test of this directory ``lab``."""
    for item in items:
        if Path(item.path).resolve().is_relative_to(HERE):
            item.add_marker(pytest.mark.lab)
