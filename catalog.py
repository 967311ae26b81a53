"""The catalogue of built-in agents and plugins: importing this module registers every one of them.

Each agent or plugin module registers itself when imported (``knowledge.registry.register``); the
knowledge plugins also register on the registry's first lookup, but the search agents live a layer
above ``knowledge`` and the registry does not import upwards. So everything that resolves agent
specs (``cli.py``; ``train/`` and its worker processes' initialisers) imports this module first.
It sits above ``search`` and below ``train`` in the layers (it imports ``knowledge`` and ``search``).

:func:`import_plugins` imports a user's plugin modules (``--import MODULE``), which register extra
agents the same way. :func:`agent_catalogue` describes every agent and its options for
``python cli.py agents``.
"""

from __future__ import annotations

import importlib
from typing import Any, Iterable

import knowledge.agents  # noqa: F401  random, greedy, minimax, expert
import knowledge.evaluation  # noqa: F401  eval.shape
import knowledge.priors  # noqa: F401  prior.gaussian
import knowledge.pruning  # noqa: F401  prune.expansion, prune.capture
import knowledge.rewards  # noqa: F401  reward.first_square, reward.outcome
import search.agents  # noqa: F401  mcts, jfa, slm, hbm, shape
from knowledge.registry import REGISTRY, option_rows


def import_plugins(modules: Iterable[str] = ()) -> None:
    """Import each of ``modules`` (user plugins that register extra agents or plugins); raises
    ``ModuleNotFoundError`` for a missing one."""
    for module in modules:
        importlib.import_module(module)


def agent_catalogue(name: str | None = None) -> list[dict[str, Any]]:
    """Every registered agent (or only ``name``), sorted: ``[{"name", "summary", "options": [{"name",
    "type", "range", "default", "description"}, ...]}]``; agents without an options model list none.
    Raises ``knowledge.registry.UnknownNameError`` for an unknown ``name``."""
    names = [REGISTRY.entry(name, "agent").name] if name is not None else REGISTRY.names("agent")
    out = []
    for n in names:
        entry = REGISTRY.entry(n, "agent")
        rows = option_rows(entry.options) if entry.options is not None else []
        out.append({"name": n, "summary": entry.summary, "options": rows})
    return out
