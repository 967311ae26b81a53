"""Every built-in knowledge plugin and agent, registered: import this module (or the top-level
``catalog``, which adds the search agents) before resolving spec strings.

Importing it imports the modules that register them: ``knowledge.agents`` (``random``, ``greedy``,
``minimax``, ``expert``, ``rollout``; ``eval.rollout``), ``knowledge.approxq`` (``approxq``), ``knowledge.evaluation`` (``eval.shape``,
``eval.expert``), ``knowledge.priors`` (``prior.gaussian``, ``prior.expert_layout``, ``prior.expert``),
``knowledge.pruning`` (``prune.expansion``, ``prune.expert``, ``prune.capture``, ``prune.threat``) and
``knowledge.rewards`` (``reward.first_square``, ``reward.outcome``, ``reward.shape``). :data:`REGISTRY`
is ``knowledge.registry.REGISTRY``, re-exported so that ``from knowledge.plugins import REGISTRY`` both
names the registry and guarantees these entries are in it.

The registry itself imports no plugin module (every plugin module imports it), and no plugin module
imports this one: the knowledge package has no import circle. Layers above ``knowledge`` (``nets``,
``search``) import this module; ``train``, ``cli`` and the front ends import ``catalog``.
"""

from __future__ import annotations

import knowledge.agents  # noqa: F401
import knowledge.approxq  # noqa: F401
import knowledge.evaluation  # noqa: F401
import knowledge.priors  # noqa: F401
import knowledge.pruning  # noqa: F401
import knowledge.rewards  # noqa: F401
from knowledge.registry import REGISTRY

__all__ = ["REGISTRY"]
