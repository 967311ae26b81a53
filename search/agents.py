"""Search agents registered by name: ``mcts``, ``slm``, ``hbm``, ``jfa`` (JFA section 3, Fig. 1).

- ``mcts``: WU-UCT with the knowledge evaluator (``eval.shape`` value, uniform policy) — or
  ``eval=uniform`` — so that search plays without nets;
- ``slm``: SLM-guided search in the layout, the ``expert`` agent in the battle (the paper's SLM setup);
- ``hbm``: the ``expert`` agent in the layout, HBM (upper net + lower DQN) search in the battle;
- ``jfa``: SLM in the layout and HBM in the battle.

Spec arguments (``name:key=value,...``): ``sims`` (simulations per move), ``threads``, ``c_puct``,
``formula`` (``puct``/``printed``), ``temperature`` (0 = most visited), ``seed``, ``prune``
(``true``/``false``: both knowledge pruners), and for the net agents ``slm=PATH``, ``upper=PATH``,
``lower=PATH`` (safetensors weights; default: the shipped model in ``models/``) and ``batch``; for
``jfa`` and ``hbm`` also ``victims`` (how many of the capture pruner's best victim sets the lower net
scores, ``SearchConfig.victim_candidates``; 0 = all). Its default is 1, the pruner's best set: the
shipped lower net was trained by supervision on the expert's captures only, so it has never seen the
other sets it would rank, and with ``victims=8`` ``jfa`` won 4 of 22 games against ``greedy``
and 6 of 10 with ``victims=1`` (README, "The shipped model"); a lower net trained by self-play
(``python cli.py selfplay --model lower``) is what ``victims=8`` is for.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from core.notation import Move
from core.state import GameState
from knowledge.registry import register
from search.mcts import Search, SearchConfig

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"


class SearchAgent:
    """An agent that plays the move chosen by a WU-UCT :class:`Search` (``Agent`` protocol).

    ``last_search`` holds the latest search's root statistics for game records: ``visits`` (root
    visit count), ``value`` (root value for the mover) and ``simulations``.
    """

    def __init__(self, name: str, search: Search, temperature: float = 0.0, seed: int = 0, owns_evaluator: bool = False):
        self.name = name
        self.search = search
        self.owns_evaluator = owns_evaluator  # close() also stops the evaluator (its inference thread)
        self.temperature = temperature
        self.rng = np.random.default_rng(seed)
        self.last_think_time = 0.0
        self.last_search: dict | None = None

    def select(self, state: GameState) -> Move:
        t0 = time.perf_counter()
        result = self.search.run(state)
        move = result.sample(self.temperature, self.rng)
        self.last_think_time = time.perf_counter() - t0
        self.last_search = {"visits": int(result.visits.sum()), "value": round(result.value, 4),
                          "simulations": result.simulations}
        return move

    def close(self) -> None:
        self.search.close()
        if self.owns_evaluator:
            self.search.evaluator.close()


def _config(sims: int, threads: int, c_puct: float, formula: str, seed: int, prune: bool, **extra) -> SearchConfig:
    return SearchConfig(simulations=sims, threads=threads, c_puct=c_puct, formula=formula, seed=seed,
                        expansion_pruner="prune.expansion" if prune else None,
                        capture_pruner="prune.capture" if prune else None, **extra)


@register("mcts", "agent", "WU-UCT search with the knowledge (eval.shape) or uniform evaluator, no nets")
def make_mcts(sims: int = 200, threads: int = 1, c_puct: float = 1.5, formula: str = "puct", temperature: float = 0.0,
              seed: int = 0, prune: bool = True, eval: str = "knowledge") -> SearchAgent:
    from nets.evaluator import KnowledgeEvaluator, UniformEvaluator

    if eval not in ("knowledge", "uniform"):
        raise ValueError(f"mcts: eval={eval!r}, expected 'knowledge' or 'uniform'")
    evaluator = KnowledgeEvaluator() if eval == "knowledge" else UniformEvaluator()
    search = Search(evaluator, _config(sims, threads, c_puct, formula, seed, prune))
    return SearchAgent(f"mcts:sims={sims}", search, temperature, seed)


def weights_path(path: str | Path | None, kind: str) -> str:
    """``path``, or the shipped ``models/default/<kind>.safetensors``; ``FileNotFoundError`` (naming the
    file and how to get one) if it does not exist."""
    p = Path(path) if path else MODELS_DIR / "default" / f"{kind}.safetensors"
    if not p.exists():
        raise FileNotFoundError(f"{kind} weights {p} not found (train them with `python cli.py selfplay`, or pass {kind}=PATH)")
    return str(p)


def _load(path: str, kind: str):
    from nets.io import load

    return load(path, expected_kind=kind)[0]


def _net_search(slm: str | None, upper: str | None, lower: str | None, batch: int, config: SearchConfig) -> Search:
    from nets.evaluator import NetEvaluator, NetVictimScorer

    # Two inference threads (one torch thread each): the compiled nets then use both cores of the
    # 2-core machine while the search threads fit in between (``nets.evaluator``: ~1.2x the battle
    # simulations/s of one, ~1.7x the layout's).
    evaluator = NetEvaluator(_load(slm, "slm") if slm else None, _load(upper, "upper") if upper else None,
                             max_batch=batch, clients=config.threads, inference_threads=2)
    # The lower net runs on the evaluator's inference threads, not in the search threads.
    scorer = NetVictimScorer(_load(lower, "lower"), evaluator=evaluator) if lower else None
    return Search(evaluator, config, victim_scorer=scorer)


@register("jfa", "agent", "SLM search in the layout, HBM (upper + lower nets) search in the battle")
def make_jfa(sims: int = 16, threads: int = 2, c_puct: float = 1.5, formula: str = "puct", temperature: float = 0.0,
             seed: int = 0, prune: bool = True, slm: str | None = None, upper: str | None = None,
             lower: str | None = None, batch: int = 8, victims: int = 1) -> SearchAgent:
    config = _config(sims, threads, c_puct, formula, seed, prune, victim_candidates=victims)
    search = _net_search(weights_path(slm, "slm"), weights_path(upper, "upper"), weights_path(lower, "lower"), batch, config)
    return SearchAgent(f"jfa:sims={sims}", search, temperature, seed, owns_evaluator=True)


@register("slm", "agent", "SLM search in the layout, the expert agent in the battle")
def make_slm(sims: int = 16, threads: int = 2, c_puct: float = 1.5, formula: str = "puct", temperature: float = 0.0,
             seed: int = 0, slm: str | None = None, batch: int = 8):
    from knowledge.agents import PhasedAgent, make_agent

    config = _config(sims, threads, c_puct, formula, seed, True)
    layout = SearchAgent(f"slm:sims={sims}", _net_search(weights_path(slm, "slm"), None, None, batch, config), temperature, seed,
                         owns_evaluator=True)
    return PhasedAgent(layout, make_agent("expert", seed=seed))


@register("hbm", "agent", "the expert agent in the layout, HBM (upper + lower nets) search in the battle")
def make_hbm(sims: int = 16, threads: int = 2, c_puct: float = 1.5, formula: str = "puct", temperature: float = 0.0,
             seed: int = 0, prune: bool = True, upper: str | None = None, lower: str | None = None, batch: int = 8,
             victims: int = 1):
    from knowledge.agents import PhasedAgent, make_agent

    config = _config(sims, threads, c_puct, formula, seed, prune, victim_candidates=victims)
    battle = SearchAgent(f"hbm:sims={sims}", _net_search(None, weights_path(upper, "upper"), weights_path(lower, "lower"), batch, config),
                         temperature, seed, owns_evaluator=True)
    return PhasedAgent(make_agent("expert", seed=seed), battle)
