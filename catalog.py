"""The catalogue of built-in agents and plugins: importing this module registers every one of them.

Each agent or plugin module registers itself when imported (``knowledge.registry.register``); the
registry imports none of them. ``knowledge.plugins`` imports every knowledge plugin module (for the
layers below this one: ``nets``, ``search``), but the search agents live a layer above ``knowledge``.
So everything that resolves agent specs (``cli.py``; ``train/`` and its worker processes'
initialisers) imports this module first.
It sits above ``search`` and below ``train`` in the layers (it imports ``knowledge`` and ``search``).

:func:`import_plugins` imports a user's plugin modules (``--import MODULE``), which register extra
agents the same way. :func:`agent_catalogue` describes every agent and its options for
``python cli.py agents``.
"""

from __future__ import annotations

import importlib
from typing import Any, Iterable

import search.agents  # noqa: F401  mcts, jfa, slm, hbm, shape
from knowledge.plugins import REGISTRY  # random, greedy, minimax, expert, rollout and the knowledge plugins
from knowledge.registry import option_rows


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
