"""The tests of ``lab/`` (the experiments): every test here carries the ``lab`` marker, which the
default run leaves out (``pyproject.toml``: ``-m 'not slow and not lab'``); run them with
``python -m pytest -q -m lab tests/lab``.

Importing ``lab.rollout`` and ``lab.slm_rollout`` registers ``rollout``, ``slm_rollout`` and
``eval.rollout`` in the process's one registry, and pytest imports this file while collecting even
when the marker deselects every test here. So their entries are taken out of the registry at once,
and put back only while this directory's tests run (a package-scoped fixture over a copy of the
registry, as ``tests/test_arena.py`` does for its test agents): the shipped tests, which are
parametrised over the registered names, never see them, whatever the order of collection.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import catalog  # noqa: F401 - every built-in agent and plugin, registered first
import lab.slm_rollout  # noqa: F401 - registers slm_rollout, and through lab.rollout rollout and eval.rollout
from knowledge.registry import REGISTRY

REGISTRY.names()  # the registry's lazy knowledge plugins, loaded before the lab entries are taken out
LAB_ENTRIES = {name: e for name, e in REGISTRY._entries.items() if e.factory.__module__.startswith("lab.")}
for _name in LAB_ENTRIES:
    del REGISTRY._entries[_name]


HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    """Mark every test of this directory ``lab`` (the hook sees the whole session's items)."""
    for item in items:
        if Path(item.path).resolve().is_relative_to(HERE):
            item.add_marker(pytest.mark.lab)


@pytest.fixture(scope="package", autouse=True)
def lab_registry():
    """The registry with the lab's agents and plugins, for this directory's tests only."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(REGISTRY, "_entries", {**REGISTRY._entries, **LAB_ENTRIES})
        yield
